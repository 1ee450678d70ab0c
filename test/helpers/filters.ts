// A hostile content filter: what one application may register to make matching expensive.

const FILTER_MAX_BYTES = 8192;

/**
 * As many `$lt` tests of `data.v` as fit in a filter of 8 KiB (about 350), in `$or`s of 64
 * filters: when none holds, every one of them runs. Each is bounded by "1" but the last, by `last`
 * (one character, so the filter keeps its size).
 */
export function hostileFilter(last: string): { filter: Record<string, unknown>; tests: number } {
  const test = (bound: string) => ({ 'data.v': { $lt: bound } });
  const shaped = (tests: unknown[]) => {
    const groups = [];
    for (let i = 0; i < tests.length; i += 64) groups.push({ $or: tests.slice(i, i + 64) });
    return { $or: groups };
  };
  const tests: unknown[] = [];
  while (JSON.stringify(shaped([...tests, test('1')])).length <= FILTER_MAX_BYTES) tests.push(test('1'));
  tests[tests.length - 1] = test(last);
  return { filter: shaped(tests), tests: tests.length };
}
