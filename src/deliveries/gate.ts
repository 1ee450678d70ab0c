// What every attempt of a pass passes through just before it starts: the webhook as it stands
// (read again from D1 once its object has been told of a change, so a disabled or deleted webhook
// gets no new attempt and a rotated secret signs at once), the endpoint's own rate, and the
// host's budget, which the application's object hands to the pass in one call.

import type { DeliveryConfig } from '../core/delivery-settings';
import { hostOf } from '../core/destinations';
import { log } from '../core/log';
import { admit, HOST_SLACK_MS, type SendSchedule, takeSlots } from '../core/send-rate';
import { retryD1 } from '../platform/d1';
import type { SendingRow } from '../webhooks/store/reads';
import { sendingRow } from '../webhooks/store/reads';
import type { DueDelivery } from './store/sending';

/** Changes of the webhook its object was told of: a pass reads the webhook again when this moves. */
export interface Notices {
  changes: number;
}

/**
 * What the endpoint was told of its host (by its application's object, with its last handover):
 * whether its webhook is the only one of its application there, as of its notices' `changes`
 * then (a change since, such as a new URL, makes it ask again).
 */
export interface HostTold {
  alone: boolean;
  changes: number;
  /** The host's starts while alone there: kept here as the application's object keeps a shared host's. */
  schedule: SendSchedule;
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
  /** What it was told of its host (absent: nothing, so it asks). */
  host?: HostTold;
  /** What passes keep between them (kept by the object): the webhook as one last read it (see knownWebhook). */
  kept?: { webhook?: KnownWebhook };
}

/** The webhook as read from D1, when, and at which count of the changes the object was told of. */
export interface KnownWebhook {
  row: SendingRow | null;
  changes: number;
  at: number;
}

/**
 * How long a pass trusts the webhook it read before, when its object was told of no change since:
 * every operation that stops or changes sending tells it (see webhooks/notify.ts), so this only
 * bounds what an untold change (a hand edit of D1) takes to apply.
 */
export const WEBHOOK_TRUSTED_MS = 60_000;

/**
 * The webhook as it stands, for a pass at `now`: what the last pass read, unless the object was
 * told of a change since or it is older than WEBHOOK_TRUSTED_MS; then read from D1 (and kept).
 */
export async function knownWebhook(endpoint: EndpointState, env: CloudflareBindings, now: number) {
  const { kept, notices } = endpoint;
  const known = kept?.webhook;
  if (known !== undefined && known.changes === notices.changes && now - known.at < WEBHOOK_TRUSTED_MS) return known.row;
  // A change told while the read is under way leaves this count behind: the next pass reads again.
  const changes = notices.changes;
  const row = await retryD1(() => sendingRow(env.DB, endpoint.webhookId));
  if (kept !== undefined) kept.webhook = { row, changes, at: now };
  return row;
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

/** Whether a pass may send to the webhook at all: it exists and is enabled. */
export const sendable = (webhook: SendingRow | null): webhook is SendingRow =>
  webhook !== null && webhook.is_enabled === 1;

/**
 * The host's slots for a pass that wants `wanted` attempts. A webhook told it is the only one of
 * its application at its host takes them itself, from a schedule of its own, as the application's
 * object would (no other webhook of the application counts there). Otherwise one call to the application's object, which keeps
 * every host's schedule for all its webhooks. Null when it cannot be asked now.
 */
export async function hostSlots(
  endpoint: EndpointState,
  env: CloudflareBindings,
  webhook: SendingRow,
  wanted: number,
  rate: number,
): Promise<HostSlots | null> {
  const { host, notices } = endpoint;
  if (host?.alone === true && host.changes === notices.changes)
    return takeSlots(host.schedule, wanted, rate, Date.now());
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
