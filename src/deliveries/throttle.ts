// Between planning a consumer batch and dispatching it: each endpoint's rate. Attempts to an
// endpoint never start faster than its rate (a token bucket in the endpoint's Durable Object,
// shared by every consumer invocation); the deliveries beyond it wait, neither failed nor counted.
import { log } from '../core/log';
import type { DeliveryToAttempt } from './store/dispatch';

/** How long deliveries wait when their endpoint's rate cannot be asked (its object failed). */
const UNKNOWN_RATE_WAIT_SECONDS = 10;

/** A due delivery held back by its endpoint's rate: it waits `delaySeconds`, with no attempt. */
export interface Held {
  row: DeliveryToAttempt;
  delaySeconds: number;
}

/**
 * The due deliveries that may be attempted now, and those held back with their wait: per
 * endpoint, the first as many as its bucket grants; the k-th held one waits k / rate seconds
 * (at least one), so a backlog comes back spread at the endpoint's rate.
 */
export async function throttle(
  env: CloudflareBindings,
  due: DeliveryToAttempt[],
  rateOf: (row: DeliveryToAttempt) => number,
): Promise<{ allowed: DeliveryToAttempt[]; held: Held[] }> {
  const byEndpoint = new Map<string, DeliveryToAttempt[]>();
  for (const row of due) byEndpoint.set(row.webhook_id, [...(byEndpoint.get(row.webhook_id) ?? []), row]);
  const allowed: DeliveryToAttempt[] = [];
  const held: Held[] = [];
  await Promise.all(
    [...byEndpoint].map(async ([webhookId, rows]) => {
      const rate = rateOf(rows[0] as DeliveryToAttempt);
      let granted: number;
      try {
        granted = await env.ENDPOINTS.getByName(webhookId).take(rows.length, rate);
      } catch (err) {
        log('error', { msg: "could not ask the endpoint's rate; its deliveries wait", webhook_id: webhookId }, err);
        for (const row of rows) held.push({ row, delaySeconds: UNKNOWN_RATE_WAIT_SECONDS });
        return;
      }
      allowed.push(...rows.slice(0, granted));
      rows.slice(granted).forEach((row, k) => {
        held.push({ row, delaySeconds: Math.max(1, Math.ceil((k + 1) / rate)) });
      });
    }),
  );
  return { allowed, held };
}
