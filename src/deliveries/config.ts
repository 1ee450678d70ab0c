import { ConfigError } from '../http/envelope';

/** How deliveries are made: read from the Worker's settings, checked once per isolate. */
export interface DeliveryConfig {
  /** Seconds one attempt may take, reading the kept part of the reply included. */
  timeoutSeconds: number;
  /** Seconds to wait after failed attempt N before attempt N + 1 (index N - 1). */
  schedule: number[];
  /** Hours of nothing but failures after which a webhook is disabled. */
  autoDisableHours: number;
  /** Days events, deliveries and attempts are kept. */
  retentionDays: number;
  /** Seconds a pending delivery may be overdue before the Cron Trigger queues it again. */
  requeueAfterSeconds: number;
}

export const DEFAULT_SCHEDULE = '5s 5m 30m 2h 5h 10h 10h';
/** The longest a queue message can be delayed (Cloudflare Queues), so the longest delay. */
export const MAX_DELAY_SECONDS = 12 * 60 * 60;
const MAX_SCHEDULE_LENGTH = 50;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

type Setting =
  | 'DELIVERY_TIMEOUT_SECONDS'
  | 'DELIVERY_RETRY_SCHEDULE'
  | 'AUTO_DISABLE_AFTER_HOURS'
  | 'DELIVERY_RETENTION_DAYS'
  | 'DELIVERY_REQUEUE_AFTER_SECONDS';

/** A setting's value, trimmed; undefined when unset or empty. */
function setting(env: CloudflareBindings, name: Setting | 'WEBHOOK_URL_ALLOWED_ORIGINS'): string | undefined {
  const value = (env as unknown as Record<string, unknown>)[name];
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** A whole number setting from `min` to `max`; `fallback` when unset. */
function wholeNumber(env: CloudflareBindings, name: Setting, fallback: number, min: number, max: number): number {
  const value = setting(env, name);
  if (value === undefined) return fallback;
  const n = /^\d{1,9}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= min && n <= max)) throw new ConfigError(name, `must be a whole number from ${min} to ${max}`);
  return n;
}

/**
 * DELIVERY_RETRY_SCHEDULE: space-separated durations with unit s, m or h (`5s 5m 2h`), each at
 * most 12 hours, at most 50 of them. Returns seconds.
 */
export function parseSchedule(text: string): number[] {
  const steps = text.trim().split(/\s+/);
  if (steps.length > MAX_SCHEDULE_LENGTH) {
    throw new ConfigError('DELIVERY_RETRY_SCHEDULE', `has more than ${MAX_SCHEDULE_LENGTH} delays`);
  }
  return steps.map((step) => {
    const m = /^(\d{1,6})([smh])$/.exec(step);
    const seconds = m === null ? Number.NaN : Number(m[1]) * (UNIT_SECONDS[m[2] as string] as number);
    if (!(seconds <= MAX_DELAY_SECONDS)) {
      throw new ConfigError(
        'DELIVERY_RETRY_SCHEDULE',
        `"${step.slice(0, 20)}" is not a duration like 30s, 5m or 2h of at most 12h`,
      );
    }
    return seconds;
  });
}

const cache = new WeakMap<object, DeliveryConfig>();

/**
 * The delivery settings of `env`, checked once per isolate. Invalid settings throw a
 * ConfigError naming the setting: deliveries then wait (fail closed) until it is fixed.
 */
export function deliveryConfig(env: CloudflareBindings): DeliveryConfig {
  let config = cache.get(env);
  if (config === undefined) {
    config = {
      timeoutSeconds: wholeNumber(env, 'DELIVERY_TIMEOUT_SECONDS', 15, 1, 30),
      schedule: parseSchedule(setting(env, 'DELIVERY_RETRY_SCHEDULE') ?? DEFAULT_SCHEDULE),
      autoDisableHours: wholeNumber(env, 'AUTO_DISABLE_AFTER_HOURS', 120, 1, 8760),
      retentionDays: wholeNumber(env, 'DELIVERY_RETENTION_DAYS', 30, 1, 3650),
      requeueAfterSeconds: wholeNumber(env, 'DELIVERY_REQUEUE_AFTER_SECONDS', 300, 5, 86_400),
    };
    cache.set(env, config);
  }
  return config;
}

const originsCache = new WeakMap<object, ReadonlySet<string>>();

/**
 * WEBHOOK_URL_ALLOWED_ORIGINS: origins (`http://127.0.0.1:8790`) that registration and delivery
 * accept although the URL rules refuse them, for local receivers and private test rigs. Empty by
 * default, and never set in production.
 */
export function allowedOrigins(env: CloudflareBindings): ReadonlySet<string> {
  let origins = originsCache.get(env);
  if (origins === undefined) {
    const list = setting(env, 'WEBHOOK_URL_ALLOWED_ORIGINS')?.split(/\s+/) ?? [];
    origins = new Set(
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
    originsCache.set(env, origins);
  }
  return origins;
}
