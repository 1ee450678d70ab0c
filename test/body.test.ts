import { describe, expect, it } from 'vitest';
import { jsonTooDeep, MAX_JSON_DEPTH } from '../src/http/body';

const nested = (depth: number, open = '[', close = ']') => open.repeat(depth) + close.repeat(depth);

describe('jsonTooDeep', () => {
  it('allows MAX_JSON_DEPTH levels and refuses one more, for arrays and objects', () => {
    expect(MAX_JSON_DEPTH).toBe(32);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    const objects = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
    expect(jsonTooDeep(objects(MAX_JSON_DEPTH))).toBe(false);
    expect(jsonTooDeep(objects(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(jsonTooDeep(`{"a":${nested(MAX_JSON_DEPTH)}}`)).toBe(true);
  });

  it('counts depth, not brackets: siblings do not add up', () => {
    expect(jsonTooDeep(`[${'[],'.repeat(1000)}{}]`)).toBe(false);
    expect(jsonTooDeep(nested(3).repeat(100), 3)).toBe(false);
  });

  it('takes another maximum', () => {
    expect(jsonTooDeep('[[1]]', 2)).toBe(false);
    expect(jsonTooDeep('[[[1]]]', 2)).toBe(true);
    expect(jsonTooDeep('{}', 0)).toBe(true);
    expect(jsonTooDeep('"no structure"', 0)).toBe(false);
  });

  it('ignores brackets inside strings, escaped quotes and backslashes included', () => {
    expect(jsonTooDeep(`{"a": "${nested(100)}"}`)).toBe(false);
    expect(jsonTooDeep(`["\\"${'['.repeat(100)}"]`)).toBe(false);
    expect(jsonTooDeep(`["\\\\", ${nested(MAX_JSON_DEPTH)}]`)).toBe(true);
    expect(jsonTooDeep(`["\\\\\\"${'{'.repeat(100)}"]`)).toBe(false);
    expect(jsonTooDeep(`{"${'['.repeat(100)}": 1}`)).toBe(false);
  });

  it('scans text nested thousands of levels deep, and malformed text, without failing', () => {
    expect(jsonTooDeep(nested(100_000))).toBe(true);
    expect(jsonTooDeep(']]]]{{')).toBe(false);
    expect(jsonTooDeep('"unterminated [[[[')).toBe(false);
    expect(jsonTooDeep('')).toBe(false);
  });
});
