// One Durable Object per application: its events (publishing is idempotent per source key), the
// ids of its deliveries, and their handover to the endpoints' objects, which hold and send them. A
// handover that fails stays in the outbox and the alarm tries again (within seconds; when the
// object itself died mid-handover, at its next start or its hourly alarm), so a stored event
// never loses a delivery. Each application's storage is its own: one that is full, or
// failing, fails only its own publishes.
import { DurableObject } from 'cloudflare:workers';
import { groupBy } from '../core/batches';
import { deliveryConfig } from '../core/delivery-settings';
import type { Why } from '../core/filter/match';
import { SET_MAX_VALUES } from '../core/filter/values';
import { log } from '../core/log';
import { startWithSchema } from '../platform/object-schema';
import { eraseStorage, keepRetention, retentionOf, retentionSet } from '../platform/object-settings';
import type { WebhookChange } from '../webhooks/notify';
import { type Audience, subscribersNow } from './audience';
import { eraseEndpoints, type ObjectsErased } from './erasure';
import { type Filters, filterTargets, tryEvent, valueSetOf } from './filtering';
import { Hosts } from './hosts';
import { emitOperational, type OperationalEvent } from './operational';
import { lastChange, noteChange } from './store/changes';
import { forgetEvents, hasLegacyEvents, oldestKept } from './store/dedupe';
import { Sequence, webhookOf } from './store/delivery-ids';
import { endpointsHeld, holdsDeliveries, rememberEndpoints } from './store/endpoints';
import { type EventToStore, type Handover, insertEvents, type StoredEvent } from './store/events';
import { journeyOf } from './store/journeys';
import { handedOver, outbox, outboxEmpty } from './store/outbox';
import { countHeld, oldestEvent, purgeEvents } from './store/retention';
import { APPLICATION_SCHEMA } from './store/schema';
import { changeValuesAtMost, countValues, dropValues, pageValues, type ValuesChange } from './store/values';

/** A page of a value set: its values in order, and its size. */
export interface ValuesPage {
  values: string[];
  count: number;
}

/** Set after an erasure, until a publish has a webhook to deliver to (see publish). */
const ERASED_KEY = 'erased';

/** How soon the alarm tries again a handover that failed (or never finished). */
const HANDOVER_RETRY_MS = 5_000;
/** Events one handover takes from the outbox. */
const HANDOVER_EVENTS = 200;
const PURGE_ROWS = 1000;
const HOUR_MS = 3_600_000;

export class Application extends DurableObject<CloudflareBindings> {
  /** Its budget at each host, what its endpoints are told of it, and its calls to them in turn. */
  private readonly hosts = new Hosts(() => this.env.ENDPOINTS);
  /** Endpoints noted as holding deliveries, in this instance (each is written once). */
  private readonly endpoints = new Set<string>();
  /** The newest webhook change told (store/changes.ts), once read in this instance. */
  private changed: number | undefined;
  /** Operational events being made here (see operational). */
  private readonly telling = new Set<Promise<void>>();
  /** Erasures under way (two runs may overlap): publishes are refused meanwhile (their senders try again). */
  private erasing = 0;
  /** The endpoints' numbers known committed (a number, once given, never changes until an erasure). */
  private readonly numbers = new Map<string, number>();
  /** The events' sequence numbers, which their deliveries' ids carry. */
  private sequence = new Sequence();
  /**
   * An alarm is known to be set (this instance saw or set it since it last rang): publish need not
   * read it. Code that deletes this object's alarm must set this false.
   */
  private alarmSet = false;
  /** Whether events stored by the releases before may remain (false once none does: none comes). */
  private legacyEvents = true;

  constructor(ctx: DurableObjectState, env: CloudflareBindings) {
    super(ctx, env);
    // Its tables at this release's version before any call or alarm reaches it.
    startWithSchema(ctx, APPLICATION_SCHEMA);
    // Handovers an instance before this one left unfinished (it died between storing and handing
    // over) are taken up soon.
    void ctx.blockConcurrencyWhile(async () => {
      try {
        if (!outboxEmpty(ctx.storage.sql)) await this.retrySoon();
      } catch (err) {
        // Its hourly alarm still comes (see publish).
        log('error', { msg: 'could not set the alarm that finishes handovers' }, err);
      }
    });
  }

  /**
   * Stores the events (all or nothing), each with a delivery to every webhook of `targets[i]`
   * whose filter (in `filters`; none: every event) matches it, and hands the deliveries to their
   * endpoints before answering. Returns each event's id (an earlier one's for an id or source key
   * published before) and the deliveries made now. `seen`: the application's newest webhook change
   * when the targets were read from D1 (see subscribersNow); none for test events and resends,
   * whose targets are given. `shared`: the application's webhooks that share their host with
   * another, as that read found them (see Hosts.tell).
   */
  async publish(
    events: EventToStore[],
    targets: string[][],
    filters: Filters = {},
    seen?: number,
    shared?: string[],
  ): Promise<StoredEvent[]> {
    if (this.erasing > 0) throw new Error('the application is being erased');
    this.changed ??= lastChange(this.ctx.storage.sql);
    const given: Audience = { targets, filters, shared };
    const now = seen === undefined ? given : await subscribersNow(this.env, events, given, seen, this.changed);
    if (now.shared !== undefined)
      await this.hosts.tell(now.shared, (id) => this.endpoints.has(id) || holdsDeliveries(this.ctx.storage.sql, id));
    // An erased application stores nothing until it has a webhook to deliver to again.
    if (this.ctx.storage.kv.get(ERASED_KEY) === true) {
      if (now.targets.every((t) => t.length === 0)) return events.map((e) => ({ eventId: e.eventId, deliveryIds: [] }));
      this.ctx.storage.kv.delete(ERASED_KEY);
    }
    // An alarm is set before the write (it rings at least hourly while the object keeps events):
    // should the handover below never finish, that alarm, or the next start of this object,
    // does it. Written only when none is set, not for every publish.
    if (!this.alarmSet) {
      if ((await this.ctx.storage.getAlarm()) === null) await this.ctx.storage.setAlarm(Date.now() + HANDOVER_RETRY_MS);
      this.alarmSet = true;
    }
    const sql = this.ctx.storage.sql;
    if (this.legacyEvents) this.legacyEvents = hasLegacyEvents(sql);
    // Idempotent for EVENT_DEDUPE_HOURS, never longer than the application's retention.
    const dedupeHours = Math.min(deliveryConfig(this.env).dedupeHours, this.retentionDays() * 24);
    const ids = {
      numbers: this.numbers,
      given: new Map<string, number>(),
      sequence: this.sequence,
      legacyEvents: this.legacyEvents,
      dedupeSince: new Date(Date.now() - dedupeHours * HOUR_MS).toISOString(),
    };
    const made: Handover[] = [];
    const stored = this.ctx.storage.transactionSync(() =>
      insertEvents(sql, events, filterTargets(sql, events, now.targets, now.filters), ids, made),
    );
    for (const [webhookId, n] of ids.given) this.numbers.set(webhookId, n);
    // Its own events only: those of publishes under way are theirs to hand over.
    if (made.length > 0 && !(await this.handOver(made))) await this.retrySoon();
    return stored;
  }

  /** The alarm rings within HANDOVER_RETRY_MS (to finish a handover). */
  private async retrySoon(): Promise<void> {
    const alarm = await this.ctx.storage.getAlarm();
    if (alarm === null || alarm > Date.now() + HANDOVER_RETRY_MS) {
      await this.ctx.storage.setAlarm(Date.now() + HANDOVER_RETRY_MS);
    }
    this.alarmSet = true;
  }

  /** The webhook whose endpoint holds the delivery, or null when the application has none such. */
  locate(deliveryId: string): string | null {
    return webhookOf(this.ctx.storage.sql, deliveryId);
  }

  /** Where the event's deliveries are (see store/journeys.ts); null when none is noted for this id. */
  journey(eventId: string): { webhookId: string; deliveryId: string }[] | null {
    return journeyOf(this.ctx.storage.sql, eventId);
  }

  /**
   * Webhook `webhookId` changed in D1 (`change`): the change is noted, so publishes that read the
   * subscribers before it read them again; when it stops or changes sending, its endpoint's object
   * is told (and waited for) if this application ever handed it a delivery (one that never had one
   * has nothing to stop, and is not woken, or made, for it). A deleted webhook's value set goes
   * with it, here, in the same call.
   */
  async webhookChanged(webhookId: string, change: WebhookChange): Promise<void> {
    const sql = this.ctx.storage.sql;
    if (change.auditId !== undefined) this.changed = noteChange(sql, change.auditId);
    if (change.deleted) {
      const rows = this.ctx.storage.transactionSync(() => dropValues(sql, webhookId));
      if (rows > 0) log('info', { msg: 'value set deleted with its webhook', webhook_id: webhookId, rows });
    }
    if (change.sending && holdsDeliveries(sql, webhookId))
      await this.env.ENDPOINTS.getByName(webhookId).webhookChanged(change.deleted === true);
  }

  /**
   * A page is about to watch the webhook's deliveries (deliveries/live.ts): its endpoint is noted
   * as one that holds deliveries, so that the webhook's deletion and the application's erasure
   * reach its watchers, even before its first delivery.
   */
  watching(webhookId: string): void {
    if (this.erasing > 0) throw new Error('the application is being erased');
    if (this.endpoints.has(webhookId)) return;
    rememberEndpoints(this.ctx.storage.sql, [webhookId]);
    this.endpoints.add(webhookId);
  }

  /**
   * Operational events about this application's webhooks, told by an operation (PUT disabling one,
   * a secret rotated) after its reply: made and published here, in this object.
   */
  async operational(events: OperationalEvent[]): Promise<void> {
    const told = emitOperational(this.env, events, (_env, stored, targets, filters) =>
      this.publish(stored, targets, filters),
    );
    // An erasure waits for it: what it hands the platform's endpoint is there before the erasure
    // erases the application's rows there, never after.
    this.telling.add(told);
    try {
      await told;
    } finally {
      this.telling.delete(told);
    }
  }

  /** A host's budget for one sending pass: up to `wanted` start slots at `rate` a second (see Hosts.slots). */
  hostSlots(host: string, wanted: number, rate: number): { slots: number[]; next: number } {
    return this.hosts.slots(host, wanted, rate);
  }

  /**
   * Adds and removes values of the webhook's set (normalised by the caller), all or nothing: past
   * SET_MAX_VALUES nothing changes.
   */
  changeValues(webhookId: string, add: string[], remove: string[]): ValuesChange {
    return changeValuesAtMost(this.ctx.storage, webhookId, add, remove, SET_MAX_VALUES);
  }

  /** A page of the webhook's value set after `after` (in order), with its size. */
  values(webhookId: string, after: string | undefined, limit: number): ValuesPage {
    const sql = this.ctx.storage.sql;
    return { values: pageValues(sql, webhookId, after, limit), count: countValues(sql, webhookId) };
  }

  /** The filter (JSON text, checked) tried against the event (JSON text) with the webhook's value set: null when it matches, else why not. */
  tryFilter(webhookId: string, filter: string, event: string): Why | null {
    return tryEvent(filter, event, valueSetOf(this.ctx.storage.sql, webhookId));
  }

  /** The days the application's events and deliveries are kept: its retention, else DELIVERY_RETENTION_DAYS. */
  retentionDays(): number {
    return retentionOf(this.ctx.storage, deliveryConfig(this.env).retentionDays);
  }

  /**
   * The application's retention, set by the platform: kept, told to every endpoint this
   * application handed deliveries to, and applied here by the alarm at once.
   */
  async setRetention(days: number): Promise<void> {
    keepRetention(this.ctx.storage, days);
    const ids = endpointsHeld(this.ctx.storage.sql);
    await Promise.all(ids.map((id) => this.env.ENDPOINTS.getByName(id).setRetention(days)));
    await this.ctx.storage.setAlarm(Date.now());
  }

  /**
   * Erases everything this application's objects hold: every endpoint it handed deliveries to,
   * then its own storage (its retention is kept: the platform's setting, not the application's
   * data), after the handovers and operational events under way. Publishes are refused
   * meanwhile; a second call finds nothing. Returns what went.
   */
  async erase(): Promise<ObjectsErased> {
    this.erasing++;
    try {
      await Promise.allSettled([...this.hosts.underWay(), ...this.telling]);
      const erased = { ...countHeld(this.ctx.storage.sql), ...(await eraseEndpoints(this.env, this.ctx.storage.sql)) };
      const retention = retentionSet(this.ctx.storage);
      await eraseStorage(this.ctx.storage, APPLICATION_SCHEMA);
      // Its numbers start again from the erased tables (its alarm went with them); the newest
      // change is read again.
      this.sequence = new Sequence();
      this.numbers.clear();
      this.alarmSet = false;
      this.legacyEvents = true;
      this.changed = undefined;
      if (retention !== undefined) keepRetention(this.ctx.storage, retention);
      this.ctx.storage.kv.put(ERASED_KEY, true);
      this.endpoints.clear();
      this.hosts.clear();
      return erased;
    } finally {
      this.erasing--;
    }
  }

  override async alarm(): Promise<void> {
    // The alarm ringing now is spent: whether one is set again is decided below.
    this.alarmSet = false;
    let handed = await this.handOver();
    while (handed && !outboxEmpty(this.ctx.storage.sql)) handed = await this.handOver();
    const days = this.retentionDays();
    const dedupeHours = Math.min(deliveryConfig(this.env).dedupeHours, days * 24);
    const now = Date.now();
    const rows = purgeEvents(this.ctx.storage, new Date(now - days * 86_400_000).toISOString(), PURGE_ROWS);
    if (rows > 0) log('info', { msg: 'expired events purged', rows });
    const keys = forgetEvents(this.ctx.storage, new Date(now - dedupeHours * HOUR_MS).toISOString(), PURGE_ROWS);
    if (keys > 0) log('info', { msg: 'source keys past the deduplication window forgotten', rows: keys });
    const keeps = oldestEvent(this.ctx.storage.sql) !== null || oldestKept(this.ctx.storage.sql) !== null;
    // More to hand over, or more keys past the window than one alarm forgets: soon again.
    if (!handed || !outboxEmpty(this.ctx.storage.sql) || keys >= PURGE_ROWS) {
      await this.ctx.storage.setAlarm(Date.now() + HANDOVER_RETRY_MS);
      this.alarmSet = true;
    } else if (rows >= PURGE_ROWS) {
      // A full step leaves more past the retention (a backlog, a shorter retention just set): again at once.
      await this.ctx.storage.setAlarm(Date.now());
      this.alarmSet = true;
    } else if (keeps) {
      // Hourly while it keeps anything: the retention's next step, and the guard of the handovers
      // of publishes to come (see publish).
      await this.ctx.storage.setAlarm(Date.now() + HOUR_MS);
      this.alarmSet = true;
    }
  }

  /**
   * Hands the outbox's deliveries (only those of `made`, a publish's own, when given) to their
   * endpoints' objects, one call per webhook; false when one could not take them (they stay in
   * the outbox).
   */
  private async handOver(made?: Handover[]): Promise<boolean> {
    // A publish hands over what it has just stored (as the outbox holds it); the alarm reads the outbox.
    const handovers = made ?? outbox(this.ctx.storage.sql, HANDOVER_EVENTS);
    const byWebhook = groupBy(
      handovers.flatMap((h) => h.deliveries),
      (d) => d.webhookId,
    );
    // Noted before the handover: a change told after it reaches the endpoint (see webhookChanged).
    const fresh = [...byWebhook.keys()].filter((id) => !this.endpoints.has(id));
    if (fresh.length > 0) {
      rememberEndpoints(this.ctx.storage.sql, fresh);
      for (const id of fresh) this.endpoints.add(id);
    }
    const failed = new Set<string>();
    await Promise.all(
      [...byWebhook].map(async ([webhookId, deliveries]) => {
        try {
          // In the order the events were stored (nothing awaits between storing and here), so each
          // endpoint gets its deliveries in the order of their ids, also when publishes run at once;
          // the application's retention travels with each (a new endpoint keeps it from the start).
          const days = retentionSet(this.ctx.storage);
          const batch = deliveries.map((d) => d.delivery);
          await this.hosts.handOver(webhookId, batch, days);
        } catch (err) {
          failed.add(webhookId);
          log('error', { msg: 'could not hand deliveries to their endpoint; retried', webhook_id: webhookId }, err);
        }
      }),
    );
    this.ctx.storage.transactionSync(() => handedOver(this.ctx.storage.sql, handovers, failed));
    return failed.size === 0;
  }
}
