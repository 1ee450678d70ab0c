import { ConfigError, InvalidInput } from '../core/errors';
import { isPublicIPv4, isPublicIPv6 } from '../core/ip-address';
import { perIsolate, setting } from '../core/settings';
import { isWellFormed } from '../core/text';

/** Longest webhook URL, as sent and as normalised. */
export const MAX_URL_LENGTH = 2048;

// Names that are never a public endpoint: localhost, .test and .invalid (RFC 6761), mDNS
// (.local), the private-use .internal, home networks (RFC 8375) and Tor onion services (RFC 7686).
const LOCAL_NAMES = ['localhost', 'local', 'internal', 'home.arpa', 'test', 'invalid', 'onion'];

const refused = (why: string) => new InvalidInput(`url ${why}`);

/** Whether a (lower-case, punycoded) host name can be a public DNS name. */
function isPublicName(host: string): boolean {
  const name = host.endsWith('.') ? host.slice(0, -1) : host;
  if (name.length === 0 || name.length > 253) return false;
  const labels = name.split('.');
  if (labels.length < 2 || labels.some((l) => l.length === 0 || l.length > 63)) return false;
  return !LOCAL_NAMES.some((local) => name === local || name.endsWith(`.${local}`));
}

/**
 * A webhook URL, checked and normalised: an absolute https URL of at most MAX_URL_LENGTH
 * characters, without credentials, port 0 or fragment, whose host is a public DNS name or a
 * public IP address. Returns the WHATWG form (`new URL(text).href`), in which URLs are stored and
 * compared; anything else throws InvalidInput (a 400 for a request). For an origin in `allowed`
 * (WEBHOOK_URL_ALLOWED_ORIGINS: local receivers, test rigs) only the scheme and host rules are waived.
 */
export function webhookUrl(text: string, allowed?: ReadonlySet<string>): string {
  if (text.length > MAX_URL_LENGTH) throw refused(`longer than ${MAX_URL_LENGTH} characters`);
  // The parser would write a lone surrogate as U+FFFD: another URL than the one sent.
  if (!isWellFormed(text)) throw refused('must be well-formed Unicode');
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw refused('is not an absolute URL');
  }
  const waived = allowed !== undefined && allowed.size > 0 && allowed.has(url.origin);
  // With origins allowed (a local run), a URL the scheme or host rules refuse is not one of them
  // either: the rule, then that. Said in the application's terms: the setting's name is the
  // operator's (docs/configuration.md), never in a reply.
  const rule = (why: string) =>
    allowed !== undefined && allowed.size > 0 && /^https?:$/.test(url.protocol)
      ? refused(`${why}: ${url.origin} is not one of the local receivers this service is set up to reach`)
      : refused(why);
  if (url.protocol !== 'https:' && !waived) throw rule('must use https');
  if (url.username !== '' || url.password !== '') throw refused('must not contain credentials');
  // Port 0 is reserved: nothing can listen on it.
  if (url.port === '0') throw refused('must not use port 0');
  const href = url.href;
  // `#` can stand unescaped in a normalised URL only as the start of its fragment (even an empty one).
  if (href.includes('#')) throw refused('must not contain a fragment');
  if (href.length > MAX_URL_LENGTH) throw refused(`longer than ${MAX_URL_LENGTH} characters`);
  if (waived) return href;
  // The WHATWG parser has turned every numeric spelling of an address (`2130706433`, `0x7f.1`,
  // `127.1`, `[::ffff:127.0.0.1]`) into dotted decimal or bracketed hex: a host whose last label
  // is a number is an IPv4 address (or the URL did not parse), one in brackets an IPv6 address.
  const host = url.hostname;
  if (host.startsWith('[') || /\.\d+\.?$|^\d+$/.test(host)) {
    const isPublic = host.startsWith('[') ? isPublicIPv6(host.slice(1, -1)) : isPublicIPv4(host);
    if (!isPublic) throw rule('host is not a public address');
  } else if (!isPublicName(host)) {
    throw rule('host is not a public DNS name');
  }
  return href;
}

/**
 * WEBHOOK_URL_ALLOWED_ORIGINS: origins (`http://127.0.0.1:8790`) that registration and delivery
 * accept although the URL rules refuse them, for local receivers and private test rigs. Empty by
 * default, and never set in production.
 */
export function allowedOrigins(env: CloudflareBindings): ReadonlySet<string> {
  return perIsolate(env, 'WEBHOOK_URL_ALLOWED_ORIGINS', () => {
    const list = setting(env, 'WEBHOOK_URL_ALLOWED_ORIGINS')?.split(/\s+/) ?? [];
    return new Set(
      list.map((text) => {
        let url: URL;
        try {
          url = new URL(text);
        } catch {
          throw new ConfigError('WEBHOOK_URL_ALLOWED_ORIGINS', `"${text.slice(0, 100)}" is not an origin`);
        }
        if (url.origin === 'null') {
          throw new ConfigError('WEBHOOK_URL_ALLOWED_ORIGINS', `"${text.slice(0, 100)}" is not an http(s) origin`);
        }
        return url.origin;
      }),
    );
  });
}
