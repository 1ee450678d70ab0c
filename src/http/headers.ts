/**
 * A header value without the optional whitespace (SP, HTAB) around it (RFC 9110 §5.6.3). The
 * runtime's Headers strips it from values set in code, but not always from values that came over
 * the wire. A loop rather than a regular expression, so a long run of spaces costs linear time.
 */
export function withoutOws(value: string): string {
  const ows = (ch: number) => ch === 0x20 || ch === 0x09;
  let start = 0;
  let end = value.length;
  while (start < end && ows(value.charCodeAt(start))) start++;
  while (end > start && ows(value.charCodeAt(end - 1))) end--;
  return start === 0 && end === value.length ? value : value.slice(start, end);
}
