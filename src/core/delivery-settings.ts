// The delivery settings (DELIVERY_*, AUTO_DISABLE_AFTER_HOURS, ENDPOINT_RATE_LIMIT, EVENT_DEDUPE_HOURS): read and checked
// once per isolate. Every path that makes deliveries checks them first (events/fail-closed.ts), so
// an invalid one fails closed everywhere, not only where deliveries are sent.
import { type ApiBase, parseApiBases } from '../core/destinations';
import { ConfigError } from '../core/errors';
import { perIsolate, setting, wholeNumber } from '../core/settings';

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
  /** Hours publishing stays idempotent per source key (EVENT_DEDUPE_HOURS): at most the retention. */
  dedupeHours: number;
  /** Attempts a second that any one endpoint is sent at most (ENDPOINT_RATE_LIMIT). */
  endpointRate: number;
  /** Seconds a final delivery stays in its endpoint's object after its last change, before R2 (HISTORY_HOT_SECONDS). */
  hotSeconds: number;
  /** The operator's stand-ins for destination APIs (DESTINATION_API_BASES); absent or empty: their own hosts. */
  apiBases?: ReadonlyMap<ApiBase, string>;
}

/** Hours publishing stays idempotent per source key when EVENT_DEDUPE_HOURS is not set. */
export const DEFAULT_DEDUPE_HOURS = 72;
/** Attempts a second per endpoint when ENDPOINT_RATE_LIMIT is not set. */
export const DEFAULT_ENDPOINT_RATE = 50;
/** The most a rate limit may allow (ENDPOINT_RATE_LIMIT, a webhook's rate_limit). */
export const MAX_ENDPOINT_RATE = 1000;

/** Seconds a final delivery stays hot when HISTORY_HOT_SECONDS is not set: three days. */
export const DEFAULT_HOT_SECONDS = 259_200;
/** The most HISTORY_HOT_SECONDS may be: ten years (longer than any retention). */
export const MAX_HOT_SECONDS = 315_360_000;

export const DEFAULT_SCHEDULE = '5s 5m 30m 2h 5h 10h 10h';
/** The longest delay of a schedule, and the most a receiver's Retry-After can ask for. */
export const MAX_DELAY_SECONDS = 12 * 60 * 60;
const MAX_SCHEDULE_LENGTH = 50;
const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600 };

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

/** DESTINATION_API_BASES, or a ConfigError naming it. */
function apiBases(env: object): ReadonlyMap<ApiBase, string> {
  try {
    return parseApiBases(setting(env, 'DESTINATION_API_BASES'));
  } catch (err) {
    throw new ConfigError('DESTINATION_API_BASES', (err as Error).message);
  }
}

/**
 * The delivery settings of `env`, checked once per isolate. Invalid settings throw a
 * ConfigError naming the setting: deliveries then wait (fail closed) until it is fixed.
 */
export function deliveryConfig(env: object): DeliveryConfig {
  return perIsolate(env, 'delivery', () => {
    const retentionDays = wholeNumber(env, 'DELIVERY_RETENTION_DAYS', 30, 1, 3650);
    const hours = retentionDays * 24;
    return {
      timeoutSeconds: wholeNumber(env, 'DELIVERY_TIMEOUT_SECONDS', 15, 1, 30),
      schedule: parseSchedule(setting(env, 'DELIVERY_RETRY_SCHEDULE') ?? DEFAULT_SCHEDULE),
      autoDisableHours: wholeNumber(env, 'AUTO_DISABLE_AFTER_HOURS', 120, 1, 8760),
      retentionDays,
      // The default is cut to a shorter retention; a value set above it is refused.
      dedupeHours: wholeNumber(env, 'EVENT_DEDUPE_HOURS', Math.min(DEFAULT_DEDUPE_HOURS, hours), 1, hours),
      endpointRate: wholeNumber(env, 'ENDPOINT_RATE_LIMIT', DEFAULT_ENDPOINT_RATE, 1, MAX_ENDPOINT_RATE),
      hotSeconds: wholeNumber(env, 'HISTORY_HOT_SECONDS', DEFAULT_HOT_SECONDS, 1, MAX_HOT_SECONDS),
      apiBases: apiBases(env),
    };
  });
}
