// Custom headers of an HTTP destination (docs/destinations.md): at most 20, names of token
// characters, values of visible ASCII; the signature, framing and hop-by-hop headers refused; the
// sensitive ones sealed and shown masked.
import { InvalidInput } from './errors';

const bad = (detail: string) => new InvalidInput(detail);

const MAX_HEADERS = 20;
const MAX_HEADER_VALUE = 1024;
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const HEADER_VALUE = /^[\x20-\x7e]*$/;
const REFUSED = new Set([
  'host',
  'content-length',
  'content-type',
  'connection',
  'transfer-encoding',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'upgrade',
  'user-agent',
]);

/** Custom headers as given: by name (as written), and which of them are sensitive. */
export interface GivenHeaders {
  values: Record<string, string>;
  sensitive: string[];
}

/** `headers` and `sensitive_headers` as given (absent or null: none). */
export function parseHeaders(headers: unknown, sensitive: unknown): GivenHeaders {
  const values: Record<string, string> = {};
  if (headers !== undefined && headers !== null) {
    if (typeof headers !== 'object' || Array.isArray(headers))
      throw bad('headers must be an object of names and values');
    const entries = Object.entries(headers as Record<string, unknown>);
    if (entries.length > MAX_HEADERS) throw bad(`headers must have at most ${MAX_HEADERS} names`);
    const seen = new Set<string>();
    for (const [name, value] of entries) {
      const lower = name.toLowerCase();
      if (!TOKEN.test(name)) throw bad(`headers: ${JSON.stringify(name)} is not a header name`);
      if (REFUSED.has(lower) || lower.startsWith('webhook-')) throw bad(`headers: ${name} cannot be set`);
      if (seen.has(lower)) throw bad(`headers: ${name} is given twice`);
      seen.add(lower);
      if (typeof value !== 'string' || value.length > MAX_HEADER_VALUE || !HEADER_VALUE.test(value))
        throw bad(`headers: ${name} must be visible ASCII and spaces, at most ${MAX_HEADER_VALUE} characters`);
      values[name] = value.trim();
    }
  }
  const names: string[] = [];
  if (sensitive !== undefined && sensitive !== null) {
    if (!Array.isArray(sensitive) || !sensitive.every((n) => typeof n === 'string'))
      throw bad('sensitive_headers must be an array of header names');
    const given = new Map(Object.keys(values).map((n) => [n.toLowerCase(), n]));
    for (const n of sensitive as string[]) {
      const name = given.get(n.toLowerCase());
      if (name === undefined) throw bad(`sensitive_headers: ${n} is not one of headers`);
      if (!names.includes(name)) names.push(name);
    }
  }
  return { values, sensitive: names };
}

/** What a sensitive header's value is shown as. */
export const MASKED = '••••';
