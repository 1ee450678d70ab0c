// What every attempt of a pass passes through just before it starts: the webhook as it stands
// (read again from D1 once its object has been told of a change, so a disabled or deleted webhook
// gets no new attempt and a rotated secret signs at once), the endpoint's own rate, and the
// host's budget, which the application's object hands to the pass in one call.

import type { DeliveryConfig } from '../core/delivery-settings';
import { log } from '../core/log';
import { admit, HOST_SLACK_MS, type SendSchedule } from '../core/send-rate';
import { retryD1 } from '../platform/d1';
import type { SendingRow } from '../webhooks/store/reads';
import { sendingRow } from '../webhooks/store/reads';
import type { DueDelivery } from './store/sending';

/** Changes of the webhook its object was told of: a pass reads the webhook again when this moves. */
export interface Notices {
  changes: number;
}

/** Whether the webhook was FIFO as its last pass read it: when the object sends next depends on it. */
export interface Ordering {
  fifo: boolean;
}

/**
 * The endpoint a pass sends to: its webhook, its storage, its send rate's schedule, its notices,
 * its ordering as last read, and who hears of what it records.
 */
export interface EndpointState {
  webhookId: string;
  storage: DurableObjectStorage;
  schedule: SendSchedule;
  notices: Notices;
  ordering: Ordering;
  /** Told the deliveries whose attempts or new states a pass recorded (the object's watchers). */
  recorded?: (deliveryIds: string[]) => void;
}

/** A host's start slots handed to a pass, and when the host has room again beyond them (ms). */
export interface HostSlots {
  slots: number[];
  next: number;
}

/** How long the deliveries wait when D1 or the application's object cannot tell now. */
const UNKNOWN_WAIT_MS = 5_000;

/** What may happen to a delivery now: start (to this webhook as it stands), end cancelled, or wait. */
export type Admission =
  | { kind: 'start'; webhook: SendingRow; seen: number }
  | { kind: 'cancel' }
  | { kind: 'hold'; until: number };

/** The host of a URL as its rate counts it: scheme, host and port. */
export const hostOf = (url: string): string => {
  try {
    return new URL(url).origin;
  } catch {
    return url;
  }
};

/** Whether a pass may send to the webhook at all: it exists and is enabled. */
export const sendable = (webhook: SendingRow | null): webhook is SendingRow =>
  webhook !== null && webhook.is_enabled === 1;

/**
 * The host's slots for a pass that wants `wanted` attempts: one call to the application's object,
 * which keeps every host's schedule for all its webhooks. Null when it cannot be asked now.
 */
export async function hostSlots(
  env: CloudflareBindings,
  webhook: SendingRow,
  wanted: number,
  rate: number,
): Promise<HostSlots | null> {
  try {
    return await env.APPLICATIONS.getByName(webhook.app_id).hostSlots(hostOf(webhook.url), wanted, rate);
  } catch (err) {
    log('error', { msg: "could not ask for the host's rate; deliveries wait", app_id: webhook.app_id }, err);
    return null;
  }
}

/**
 * The gate of one pass. `first` is the webhook as the pass read it, `host` the host's slots it was
 * given. Once one delivery waits, every one after it waits too (the backlog keeps its order).
 */
export function openGate(
  endpoint: EndpointState,
  env: CloudflareBindings,
  config: DeliveryConfig,
  first: SendingRow,
  host: HostSlots,
) {
  let seen = endpoint.notices.changes;
  let webhook: Promise<SendingRow | null> = Promise.resolve(first);
  let heldUntil: number | null = null;
  const origin = hostOf(first.url);
  const slots = [...host.slots];
  const hold = (until: number): Admission => {
    heldUntil = heldUntil === null ? until : Math.min(heldUntil, until);
    return { kind: 'hold', until };
  };

  /** The webhook as it stands: read again from D1 when the object was told of a change since. */
  const current = () => {
    if (endpoint.notices.changes !== seen) {
      seen = endpoint.notices.changes;
      webhook = retryD1(() => sendingRow(env.DB, endpoint.webhookId));
    }
    return webhook;
  };

  return {
    /** When the pass should come back for the deliveries that wait (null: none waits). */
    heldUntil: () => heldUntil,
    /** Whether the webhook may have changed since `admission` (the attempt then asks again). */
    changedSince: (admission: { seen: number }) => endpoint.notices.changes !== admission.seen,

    /** Whether `row` may start now: the webhook as it stands, the endpoint's rate, the host's slot. */
    async admit(row: DueDelivery): Promise<Admission> {
      if (heldUntil !== null) return hold(heldUntil);
      let now: SendingRow | null;
      try {
        now = await current();
      } catch (err) {
        log('error', { msg: 'could not read the webhook; its deliveries wait', webhook_id: endpoint.webhookId }, err);
        return hold(Date.now() + UNKNOWN_WAIT_MS);
      }
      // Disabled or deleted since: the delivery ends, cancelled, without a request.
      if (!sendable(now)) return { kind: 'cancel' };
      // One before it was held while this one waited for the webhook: it is held too.
      if (heldUntil !== null) return hold(heldUntil);
      // Its URL moved to another host: the next pass asks that host's budget.
      if (hostOf(now.url) !== origin) return hold(Date.now());
      const at = Date.now();
      // The endpoint's rate: the service's, or the webhook's own rate_limit where it is lower.
      const rate = Math.min(config.endpointRate, now.rate_limit ?? config.endpointRate);
      const wait = admit(endpoint.schedule, row.delivery_id, rate, at);
      if (wait > 0) return hold(at + wait);
      // The host's budget: the next slot not yet past its slack.
      while (slots.length > 0 && (slots[0] as number) + HOST_SLACK_MS < at) slots.shift();
      const slot = slots.shift();
      if (slot === undefined) return hold(Math.max(host.next, at));
      if (slot > at) await new Promise((resolve) => setTimeout(resolve, slot - at));
      return { kind: 'start', webhook: now, seen };
    },
  };
}

export type Gate = ReturnType<typeof openGate>;
