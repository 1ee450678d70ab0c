// What text we store may hold. Storage writes text as UTF-8, where a lone surrogate (a JSON string
// may spell one: "\ud800") has no encoding and would become U+FFFD: a value other than the one
// the client sent, and one character counted as another. Such text is refused, never repaired;
// so are bytes that are not UTF-8 (a query's percent-encoding; a body is decoded strictly, and so
// are a token's claims, by jose), which a decoder would read with U+FFFD in their place.

// With the `u` flag a pair of surrogates is one code point: \p{Cs} matches only a lone one.
const LONE_SURROGATE = /\p{Cs}/u;
// C0 controls and DEL (U+0000-U+001F, U+007F), or a lone surrogate.
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it finds
const CONTROL_OR_LONE_SURROGATE = /[\u0000-\u001f\u007f\p{Cs}]/u;

/** Whether `text` is well-formed Unicode: no lone surrogate. */
export const isWellFormed = (text: string) => !LONE_SURROGATE.test(text);

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Whether `bytes` are UTF-8. What is not (`FF`, `ED A0 80`: a surrogate's encoding) a decoder
 * reads as U+FFFD, another value than the one sent: such bytes are refused, never read.
 */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    strictUtf8.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether `text` can name an application (a token's application claim, an event's `app_id`): not
 * empty, well-formed, and without control characters (U+0000-U+001F, U+007F), which would pass
 * into log lines and the ids of objects as they are.
 */
export const isAppId = (text: string) => text !== '' && !CONTROL_OR_LONE_SURROGATE.test(text);

/** The longest application id that an event or a platform operation may name, in code points. */
export const MAX_APP_ID_LENGTH = 255;
