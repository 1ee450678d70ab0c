// Between planning a consumer batch and dispatching it: each endpoint's rate. Attempts to an
// endpoint never start faster than its rate (a schedule in the endpoint's Durable Object, shared by
// every consumer invocation); the deliveries beyond it wait for the slot they are promised,
// neither failed nor counted as attempts.
import { log } from '../core/log';
import type { DeliveryToAttempt } from './store/dispatch';

/** How long deliveries wait when their endpoint's rate cannot be asked (its object failed). */
const UNKNOWN_RATE_WAIT_SECONDS = 10;

/** A due delivery held back by its endpoint's rate: it comes back after `delaySeconds`, with no attempt. */
export interface Held {
  row: DeliveryToAttempt;
  delaySeconds: number;
}

/** The due deliveries that may be attempted now, and those held back until their slot. */
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
      let waits: number[];
      try {
        const endpoint = env.ENDPOINTS.getByName(webhookId);
        waits = await endpoint.admit(
          rows.map((row) => row.delivery_id),
          rateOf(rows[0] as DeliveryToAttempt),
        );
      } catch (err) {
        log('error', { msg: "could not ask the endpoint's rate; its deliveries wait", webhook_id: webhookId }, err);
        waits = rows.map(() => UNKNOWN_RATE_WAIT_SECONDS * 1000);
      }
      rows.forEach((row, i) => {
        const wait = waits[i] ?? 0;
        if (wait <= 0) allowed.push(row);
        else held.push({ row, delaySeconds: Math.ceil(wait / 1000) });
      });
    }),
  );
  return { allowed, held };
}
