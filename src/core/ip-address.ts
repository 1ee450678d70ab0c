// Whether an IP address, as the WHATWG URL parser writes a host, is a public unicast address.
// The parser has already turned every numeric spelling (`2130706433`, `0x7f.1`, `127.1`,
// `[::ffff:127.0.0.1]`) into its canonical form: dotted decimal for IPv4, compressed lower-case
// hex for IPv6. So only those two forms are read here, and anything else is not public.
//
// The special-purpose blocks are IANA's registries (loopback, private, link-local, CGNAT,
// unspecified, multicast, broadcast, documentation, benchmarking, AS112, AMT, unique-local,
// IPv4-mapped and -translated, 6to4, Teredo, ORCHID, ...): an address in any of them is refused.
// IPv6 must also lie in 2000::/3, the only space allocated for global unicast. A test holds this
// list against ipaddr.js's, address by address.

/** [first bits of the block as one number, prefix length]: IPv4 blocks. */
const V4_SPECIAL: [number, number][] = [
  [0x00000000, 8], // unspecified ("this network")
  [0x0a000000, 8], // private
  [0x64400000, 10], // carrier-grade NAT
  [0x7f000000, 8], // loopback
  [0xa9fe0000, 16], // link-local (cloud metadata)
  [0xac100000, 12], // private
  [0xc0000000, 24], // IETF protocol assignments
  [0xc0000200, 24], // documentation
  [0xc01fc400, 24], // AS112
  [0xc034c100, 24], // AMT
  [0xc0586300, 24], // 6to4 relay anycast
  [0xc0a80000, 16], // private
  [0xc0af3000, 24], // AS112
  [0xc6120000, 15], // benchmarking
  [0xc6336400, 24], // documentation
  [0xcb007100, 24], // documentation
  [0xe0000000, 4], // multicast
  [0xf0000000, 4], // reserved, and the broadcast address
];

/** [the block's leading 16-bit groups, prefix length]: IPv6 blocks inside 2000::/3. */
const V6_SPECIAL: [number[], number][] = [
  [[0x2001, 0x0000], 23], // IETF protocol assignments (Teredo, benchmarking, AMT, AS112, ORCHID, ...)
  [[0x2001, 0x0db8], 32], // documentation
  [[0x2002], 16], // 6to4
  [[0x2620, 0x004f, 0x8000], 48], // AS112
  [[0x3fff, 0x0000], 20], // documentation
];

function inBlock(groups: number[], block: number[], bits: number): boolean {
  for (let i = 0; bits > 0; i++, bits -= 16) {
    const mask = bits >= 16 ? 0xffff : (0xffff << (16 - bits)) & 0xffff;
    if (((groups[i] ?? 0) & mask) !== ((block[i] ?? 0) & mask)) return false;
  }
  return true;
}

/** An IPv4 host in dotted decimal (`203.0.114.7`); false for any other text. */
export function isPublicIPv4(host: string): boolean {
  const octets = host.split('.');
  if (octets.length !== 4 || !octets.every((o) => /^(0|[1-9]\d{0,2})$/.test(o) && Number(o) <= 255)) return false;
  const value = octets.reduce((n, o) => n * 256 + Number(o), 0);
  return !V4_SPECIAL.some(([block, bits]) => value >>> (32 - bits) === block >>> (32 - bits));
}

/** The eight 16-bit groups of an IPv6 address in hex (`2606:4700::1111`); null for any other text. */
function ipv6Groups(text: string): number[] | null {
  const halves = text.split('::');
  if (halves.length > 2) return null;
  const read = (part: string) => (part === '' ? [] : part.split(':'));
  const head = read(halves[0] as string);
  const tail = halves.length === 2 ? read(halves[1] as string) : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/i.test(g))) return null;
  return groups.map((g) => Number.parseInt(g, 16));
}

/** An IPv6 host without its brackets; false for any other text. */
export function isPublicIPv6(host: string): boolean {
  const groups = ipv6Groups(host);
  if (groups === null || (groups[0] as number) >> 13 !== 1) return false;
  return !V6_SPECIAL.some(([block, bits]) => inBlock(groups, block, bits));
}
