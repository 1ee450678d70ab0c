import fc from 'fast-check';
// The reference: ipaddr.js's own list of special-purpose ranges (a test dependency only; the
// Worker ships its own few lines instead of the library).
import ipaddr from 'ipaddr.js';
import { describe, expect, it } from 'vitest';
import { isPublicIPv4, isPublicIPv6 } from '../src/core/ip-address';

/** What the URL parser makes of an address: the host our classifier reads. */
const parsedHost = (literal: string) => new URL(`https://${literal}/`).hostname;

const referenceV4 = (dotted: string) => ipaddr.parse(dotted).range() === 'unicast';
const referenceV6 = (text: string) => {
  const address = ipaddr.IPv6.parse(text);
  return address.range() === 'unicast' && (address.parts[0] as number) >> 13 === 1;
};

/** Every block edge ipaddr.js knows, and one address on each side of it. */
function edges(kind: 'ipv4' | 'ipv6'): string[] {
  // The library's own table (not in its type declarations): { name: [address, bits] | [[address, bits], ...] }.
  type Block = [ipaddr.IPv4 | ipaddr.IPv6, number];
  const prototype = (kind === 'ipv4' ? ipaddr.IPv4.prototype : ipaddr.IPv6.prototype) as unknown as {
    SpecialRanges: Record<string, Block | Block[]>;
  };
  const ranges = prototype.SpecialRanges;
  const out: string[] = [];
  for (const entry of Object.values(ranges)) {
    const blocks = (Array.isArray(entry[0]) ? entry : [entry]) as Block[];
    for (const [address, bits] of blocks) {
      const bytes = address.toByteArray();
      const first = [...bytes];
      const last = bytes.map((b, i) => {
        const fixed = Math.max(0, Math.min(8, bits - i * 8));
        return b | (0xff >> fixed);
      });
      for (const edge of [first, last]) {
        for (const delta of [-1, 0, 1]) {
          const moved = [...edge];
          let i = moved.length - 1;
          let carry = delta;
          while (carry !== 0 && i >= 0) {
            const v = (moved[i] as number) + carry;
            moved[i] = (v + 256) % 256;
            carry = v < 0 ? -1 : v > 255 ? 1 : 0;
            i--;
          }
          out.push(ipaddr.fromByteArray(moved).toString());
        }
      }
    }
  }
  return out;
}

describe('public IP addresses (the URL rules)', () => {
  it('agrees with ipaddr.js on every IPv4 block edge and its neighbours', () => {
    const hosts = edges('ipv4');
    expect(hosts.length).toBeGreaterThan(100);
    for (const dotted of hosts)
      expect([dotted, isPublicIPv4(parsedHost(dotted))]).toEqual([dotted, referenceV4(dotted)]);
  });

  it('agrees with ipaddr.js on every IPv6 block edge and its neighbours', () => {
    const hosts = edges('ipv6');
    expect(hosts.length).toBeGreaterThan(100);
    for (const text of hosts) {
      const host = parsedHost(`[${text}]`).slice(1, -1);
      expect([text, isPublicIPv6(host)]).toEqual([text, referenceV6(text)]);
    }
  });

  it('agrees with ipaddr.js on random IPv4 addresses, in any numeric spelling', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.constantFrom('dotted', 'integer', 'hex'),
        (n, spelling) => {
          const dotted = [24, 16, 8, 0].map((s) => (n >>> s) & 0xff).join('.');
          const text = spelling === 'dotted' ? dotted : spelling === 'integer' ? String(n) : `0x${n.toString(16)}`;
          const host = parsedHost(text);
          expect(host).toBe(dotted);
          expect(isPublicIPv4(host)).toBe(referenceV4(dotted));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('agrees with ipaddr.js on random IPv6 addresses, most of them in 2000::/3 or near a block', () => {
    const group = fc.integer({ min: 0, max: 0xffff });
    const first = fc.oneof(
      group,
      fc.integer({ min: 0x2000, max: 0x3fff }),
      fc.constantFrom(0x2001, 0x2002, 0x2620, 0x3fff),
    );
    const second = fc.oneof(group, fc.integer({ min: 0, max: 0x1ff }), fc.constantFrom(0xdb8, 0x4f));
    fc.assert(
      fc.property(
        first,
        second,
        fc.array(fc.oneof(group, fc.constant(0)), { minLength: 6, maxLength: 6 }),
        (a, b, rest) => {
          const text = [a, b, ...rest].map((g) => g.toString(16)).join(':');
          const host = parsedHost(`[${text}]`).slice(1, -1);
          expect(isPublicIPv6(host)).toBe(referenceV6(text));
        },
      ),
      { numRuns: 5000 },
    );
  });

  it('refuses IPv4-mapped and -translated IPv6, and text that is not an address', () => {
    for (const text of ['::ffff:1.2.3.4', '::ffff:0:1.2.3.4', '64:ff9b::1.2.3.4', '::', '::1'])
      expect(isPublicIPv6(parsedHost(`[${text}]`).slice(1, -1))).toBe(false);
    for (const text of ['', '1.2.3', '1.2.3.4.5', '01.2.3.4', '256.1.1.1', 'a.b.c.d'])
      expect(isPublicIPv4(text)).toBe(false);
    for (const text of ['', '2001:db8', '2606:4700::1111::1', '2606:4700:0:0:0:0:0:1111:1', 'g::1'])
      expect(isPublicIPv6(text)).toBe(false);
    expect(isPublicIPv4('8.8.8.8')).toBe(true);
    expect(isPublicIPv6('2606:4700::1111')).toBe(true);
  });
});
