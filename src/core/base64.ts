/** Standard padded base64 of bytes. */
export const toBase64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));
/** The bytes of standard base64 text; throws on text that is not base64. */
export const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
