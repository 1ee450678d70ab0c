import { describe, expect, it } from 'vitest';
import { parseSchedule } from '../src/core/delivery-settings';
import { KEPT_BODY_BYTES, keptText, retryAfterSeconds } from '../src/deliveries/attempt';
import { parseInstant } from '../src/deliveries/recover';

const bytesOf = (text: string) => new TextEncoder().encode(text).byteLength;

describe('keptText', () => {
  it('keeps at most 1 KiB of UTF-8, dropping a character cut in two at the end', () => {
    const body = new TextEncoder().encode(`a${'é'.repeat(600)}`);
    const text = keptText(body);
    expect(text).toBe(`a${'é'.repeat(511)}`);
    expect(bytesOf(text)).toBe(1023);
  });

  it('replaces invalid bytes and never goes past 1 KiB although each replacement takes three', () => {
    const text = keptText(new Uint8Array(2000).fill(0xff));
    expect(text).toBe('\ufffd'.repeat(341));
    expect(bytesOf(text)).toBeLessThanOrEqual(KEPT_BODY_BYTES);
  });

  it('keeps a short body whole', () => {
    expect(keptText(new TextEncoder().encode('thanks 🎉'))).toBe('thanks 🎉');
  });

  it('masks every secret that starts in the kept part, whole where the kept part ends inside it', () => {
    const secret = 'tok_0123456789abcdef';
    const encode = (text: string) => new TextEncoder().encode(text);
    expect(keptText(encode(`{"a":"${secret}","b":"${secret}x"}`), [secret])).toBe('{"a":"••••","b":"••••x"}');
    // Astride the end: nothing of it kept, the mask cut to the 1 KiB instead.
    const astride = keptText(encode(`${'x'.repeat(KEPT_BODY_BYTES - 4)}${secret}`), [secret]);
    expect(astride).toBe(`${'x'.repeat(KEPT_BODY_BYTES - 4)}•`);
    expect(bytesOf(astride)).toBeLessThanOrEqual(KEPT_BODY_BYTES);
    // Past the end: cut as without secrets.
    const past = `${'x'.repeat(KEPT_BODY_BYTES)}${secret}`;
    expect(keptText(encode(past), [secret])).toBe(keptText(encode(past)));
    // The longer of two secrets that start alike, and none that is empty.
    expect(keptText(encode(`${secret}99 tok`), [secret, `${secret}99`, ''])).toBe('•••• tok');
  });
});

describe('retryAfterSeconds', () => {
  it('reads seconds and HTTP dates, and nothing else', () => {
    const now = Date.parse('2026-11-23T12:00:00Z');
    expect(retryAfterSeconds('120', now)).toBe(120);
    expect(retryAfterSeconds(' 7 ', now)).toBe(7);
    expect(retryAfterSeconds('Mon, 23 Nov 2026 12:10:00 GMT', now)).toBe(600);
    expect(retryAfterSeconds('Mon, 23 Nov 2026 11:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds('-5', now)).toBeNull();
    expect(retryAfterSeconds('soon', now)).toBeNull();
    expect(retryAfterSeconds(null, now)).toBeNull();
  });

  it('reads seconds of any length (11 digits and more), for the caller to cap', () => {
    expect(retryAfterSeconds('10000000000')).toBe(10_000_000_000);
    expect(retryAfterSeconds('99999999999999999999')).toBeGreaterThan(43_200);
  });
});

describe('parseSchedule', () => {
  it('reads durations in s, m and h', () => {
    expect(parseSchedule('5s 5m 30m 2h 5h 10h 10h')).toEqual([5, 300, 1800, 7200, 18000, 36000, 36000]);
    expect(parseSchedule(' 1s  12h ')).toEqual([1, 43200]);
  });

  it.each(['13h', '5', '5d', '1.5h', '-1s', Array.from({ length: 51 }, () => '1s').join(' ')])('refuses %s', (text) => {
    expect(() => parseSchedule(text)).toThrow(expect.objectContaining({ setting: 'DELIVERY_RETRY_SCHEDULE' }));
  });
});

describe('parseInstant (recovery windows)', () => {
  it('reads ISO 8601 date-times with a time zone', () => {
    expect(parseInstant('2026-11-23T14:05:35Z', 'since')).toBe(Date.parse('2026-11-23T14:05:35Z'));
    expect(parseInstant('2026-11-23T14:05:35.951+01:00', 'since')).toBe(Date.parse('2026-11-23T13:05:35.951Z'));
    expect(parseInstant('2024-02-29T00:00Z', 'since')).toBe(Date.parse('2024-02-29T00:00:00Z'));
  });

  it.each([
    '2026-02-30T00:00:00Z',
    '2026-13-01T00:00:00Z',
    '2026-11-23T24:00:00Z',
    '2026-11-23T10:60:00Z',
    '2026-11-23T10:00:00',
    '2026-11-23',
    5,
  ])('refuses %s', (value) => {
    expect(() => parseInstant(value, 'since')).toThrow(expect.objectContaining({ status: 400 }));
  });
});
