// The Worker's settings (vars and secrets), read and checked once per isolate: the Workers runtime
// hands the same `env` object to every request of an isolate, so it is the key of one cache.
import { ConfigError } from './errors';

const cache = new WeakMap<object, Map<string, unknown>>();

/**
 * `read()`, computed once per isolate for `env` and kept under `name`. A failure is not kept (a
 * thrown error, or a promise that rejects): the next call reads the settings again.
 */
export function perIsolate<T>(env: object, name: string, read: () => T): T {
  let values = cache.get(env);
  if (values === undefined) {
    values = new Map();
    cache.set(env, values);
  }
  if (values.has(name)) return values.get(name) as T;
  const value = read();
  values.set(name, value);
  if (value instanceof Promise) value.catch(() => values.delete(name));
  return value;
}

/** A setting's value, trimmed; undefined when unset or empty. */
export function setting(env: object, name: string): string | undefined {
  const value = (env as Record<string, unknown>)[name];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** A whole-number setting from `min` to `max`; `fallback` when unset. */
export function wholeNumber(env: object, name: string, fallback: number, min: number, max: number): number {
  const value = setting(env, name);
  if (value === undefined) return fallback;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new ConfigError(name, `must be a whole number from ${min} to ${max}`);
  return n;
}
