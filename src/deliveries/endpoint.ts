// One Durable Object per endpoint (a webhook, by its id): the endpoint's deliveries, their attempts
// and counters in its own SQLite database, and the one place that sends to it. Its alarm runs the
// sending passes at the endpoint's own rate; alarms survive restarts and deploys, so a pending
// delivery is resumed by the object itself. A slow or dead endpoint holds only its own object.
import { DurableObject } from 'cloudflare:workers';
import { deliveryConfig } from '../core/delivery-settings';
import { ConfigError, describeFailure } from '../core/errors';
import { log } from '../core/log';
import { PLATFORM_ENDPOINT } from '../core/operational-settings';
import type { Page } from '../core/pages';
import { newSchedule } from '../core/send-rate';
import { nextDeliveryId } from '../events/store/delivery-ids';
import { startWithSchema } from '../platform/object-schema';
import { eraseStorage, keepRetention, retentionOf } from '../platform/object-settings';
import { allowedOrigins } from '../webhooks/url';
import { ArchiveReader, archivePass, archivePrefix, purgeArchive } from './archive';
import { failedInArchive, historyDelivery, historyEvent, historyPage } from './history';
import { acceptWatcher, answerPings, tellWatchers, watcherClosed, webhookGone } from './live';
import { sendPlatformDue } from './platform';
import { WAIT_SECONDS } from './schedule';
import { type EndpointState, type HostTold, type Notices, type Ordering, type SendSettings, sendDue } from './send';
import { lastDeliveryId } from './store/alerts';
import { oldestArchived, restoreDeliveries } from './store/archive';
import {
  type AttemptRow,
  type DeliveryPageQuery,
  type DeliveryRow,
  type HourCounts,
  readHourCounts,
} from './store/log';
import { countHeld, eraseApplicationRows, oldestCreated, purgeDeliveries } from './store/retention';
import { ENDPOINT_SCHEMA } from './store/schema';
import {
  endpointWebhook,
  insertDeliveries,
  type NewDelivery,
  recoverDeliveries,
  rememberWebhook,
} from './store/sending';

/** Passes one alarm runs at most before it hands over to the next alarm (at once). */
const PASSES_PER_ALARM = 20;
/** Rows the retention deletes per table and pass. */
const PURGE_ROWS = 1000;
const HOUR_MS = 3_600_000;

/** The earliest of these times (ms); null when none is given. */
const earliest = (...times: (number | null)[]) =>
  times.reduce<number | null>((a, b) => (a === null ? b : b === null ? a : Math.min(a, b)), null);

export class Endpoint extends DurableObject<CloudflareBindings> {
  private readonly schedule = newSchedule();
  /** Changes of the webhook that its operations told this object about (see webhookChanged). */
  private readonly notices: Notices = { changes: 0 };
  /** Whether the webhook was FIFO when a pass last read it (see webhookChanged). */
  private readonly ordering: Ordering = { fifo: false };
  /** Whether its webhook is alone at its host, as its last handover said (see hostSlots). */
  private readonly host: HostTold = { alone: false, changes: 0, schedule: newSchedule() };
  /** What its passes keep between them: the webhook as one last read it (see knownWebhook). */
  private readonly kept: EndpointState['kept'] = {};
  /** The sending passes, one after another: never two at once. */
  private sending: Promise<void> = Promise.resolve();
  /** A pass is under way: new work then only says so (`arrived`), and the pass comes back for it. */
  private passing = false;
  private arrived = false;
  /** When the retention last ran in this instance (ms). */
  private purgedAt = 0;
  /** When archiving has work next (ms): the passes before it skip it. */
  private archiveAt = 0;
  /** The archive's objects, the last few read kept. */
  private readonly archive: ArchiveReader;

  constructor(ctx: DurableObjectState, env: CloudflareBindings) {
    super(ctx, env);
    // Its tables at this release's version before any call or alarm reaches it.
    startWithSchema(ctx, ENDPOINT_SCHEMA);
    answerPings(ctx);
    this.archive = new ArchiveReader(env.HISTORY);
  }

  /** A page watching the deliveries (live.ts): the upgrade, once the Worker has checked its token. */
  override async fetch(): Promise<Response> {
    return acceptWatcher(this.ctx);
  }

  /** A watcher's message other than `ping` (which the runtime answers): nothing to do. */
  override async webSocketMessage(): Promise<void> {}

  override async webSocketClose(ws: WebSocket): Promise<void> {
    watcherClosed(ws);
  }

  override async webSocketError(ws: WebSocket): Promise<void> {
    watcherClosed(ws);
  }

  /**
   * New deliveries handed over by their application's object (a repeat changes nothing); sent at
   * once. `retentionDays`: the application's retention, when the platform set one. `alone`: the
   * webhook is the only one of its application at its host, as the publish read it.
   */
  async handOver(webhookId: string, deliveries: NewDelivery[], retentionDays?: number, alone = false): Promise<void> {
    this.host.alone = alone;
    this.host.changes = this.notices.changes;
    const added = this.ctx.storage.transactionSync(() => {
      rememberWebhook(this.ctx.storage.sql, webhookId);
      if (retentionDays !== undefined) keepRetention(this.ctx.storage, retentionDays);
      return insertDeliveries(this.ctx.storage.sql, deliveries);
    });
    if (added > 0) {
      tellWatchers(
        this.ctx,
        'created',
        deliveries.map((d) => d.delivery_id),
      );
      await this.workArrived(Date.now());
    }
  }

  /**
   * The platform's operational endpoint (the object named PLATFORM_ENDPOINT only): one more
   * operational event to send to OPERATIONAL_WEBHOOK_URL, given its id here.
   */
  async handOverOperational(delivery: Omit<NewDelivery, 'delivery_id'>): Promise<void> {
    const sql = this.ctx.storage.sql;
    this.ctx.storage.transactionSync(() => {
      rememberWebhook(sql, PLATFORM_ENDPOINT);
      insertDeliveries(sql, [{ ...delivery, delivery_id: nextDeliveryId(lastDeliveryId(sql), Date.now()) }]);
    });
    await this.workArrived(Date.now());
  }

  /** A page of the delivery log, hot and archived deliveries alike. */
  list(query: DeliveryPageQuery): Promise<Page<DeliveryRow>> {
    return historyPage(this.ctx.storage, this.archive, query);
  }

  get(deliveryId: string, appId: string): Promise<{ delivery: DeliveryRow; attempts: AttemptRow[] } | null> {
    return historyDelivery(this.ctx.storage, this.archive, deliveryId, appId);
  }

  /** What a resend of the delivery copies; null when the application has none such here. */
  eventOf(deliveryId: string, appId: string): Promise<{ type: string; payload: string; message_id: string } | null> {
    return historyEvent(this.ctx.storage, this.archive, deliveryId, appId);
  }

  /**
   * Failed deliveries created in [since, until) attempted again, on a fresh schedule (archived
   * ones made hot again first). Returns how many.
   */
  async recover(since: string, until: string, now: string): Promise<number> {
    const cold = await failedInArchive(this.ctx.storage, this.archive, Date.parse(since), Date.parse(until));
    // Back hot and recovered in one synchronous step: no archiving pass comes between.
    restoreDeliveries(this.ctx.storage, cold);
    const recovered = recoverDeliveries(this.ctx.storage.sql, since, until, now);
    tellWatchers(this.ctx, 'recorded', recovered);
    if (recovered.length > 0) await this.workArrived(Date.now());
    return recovered.length;
  }

  /**
   * The webhook changed in D1 (disabled, deleted, its URL or its signing secret): told by the
   * operation once its write has committed, before it answers. A pass under way reads the webhook
   * again before its next attempt starts, so nothing that starts after the reply sends the old way.
   * `deleted`: the webhook is gone, and so are the pages watching it (live.ts).
   */
  async webhookChanged(deleted = false): Promise<void> {
    this.notices.changes++;
    if (deleted) webhookGone(this.ctx, true);
    // A FIFO endpoint waits for its head only: a pass now reads whether it still is one.
    if (this.ordering.fifo) await this.workArrived(Date.now());
  }

  /** Another webhook of the application now shares this one's host: its passes ask for the host's slots. */
  async hostShared(): Promise<void> {
    this.host.alone = false;
  }

  /** The application's retention changed: kept, and applied by the next alarm (at once). */
  async setRetention(days: number): Promise<void> {
    if (!keepRetention(this.ctx.storage, days)) return;
    this.purgedAt = 0;
    await this.workArrived(Date.now());
  }

  /**
   * Erases everything this endpoint holds (its application is being erased), after any sending
   * pass under way; returns what went. A second call finds nothing.
   */
  erase(): Promise<{ deliveries: number; attempts: number }> {
    return this.afterPasses(async () => {
      const held = countHeld(this.ctx.storage.sql);
      await eraseStorage(this.ctx.storage, ENDPOINT_SCHEMA);
      this.purgedAt = 0;
      webhookGone(this.ctx, false);
      return held;
    });
  }

  /**
   * The platform's operational endpoint (PLATFORM_ENDPOINT) only: erases what it holds of an
   * application being erased (its deliveries, their attempts, its archived ones' slim rows and
   * index; their R2 objects go with the rest of its archive), after any pass under way, so that no
   * pass archives them again. Returns what went; a second call finds nothing.
   */
  eraseApplication(appId: string): Promise<{ deliveries: number; attempts: number }> {
    return this.afterPasses(() => eraseApplicationRows(this.ctx.storage, appId, archivePrefix(appId)));
  }

  /** Runs `work` after the sending pass under way, if any; no pass starts before it ends. */
  private afterPasses<T>(work: () => T | Promise<T>): Promise<T> {
    const run = this.sending.then(work);
    this.sending = run.then(
      () => {},
      () => {},
    );
    return run;
  }

  stats(since: string): HourCounts[] {
    return readHourCounts(this.ctx.storage.sql, since);
  }

  /** Sends whatever is due now (after any pass under way), then sets the alarm for what comes next. */
  deliverDue(): Promise<void> {
    return this.run(false);
  }

  override async alarm(): Promise<void> {
    await this.run(true);
  }

  private run(inAlarm: boolean): Promise<void> {
    const run = this.sending.then(() => this.send(inAlarm));
    this.sending = run.catch(() => {});
    return run;
  }

  /**
   * Deliveries became due by `at` (handed over, recovered): the alarm rings no later
   * than that. While a pass is under way its end sets the alarm, so it is only told, and comes
   * back for them: setting the alarm now would be overwritten by it.
   */
  private async workArrived(at: number): Promise<void> {
    if (this.passing) {
      this.arrived = true;
      return;
    }
    const current = await this.ctx.storage.getAlarm();
    if (current === null || current > at) await this.ctx.storage.setAlarm(at);
  }

  /**
   * Passes until nothing is due now, work that arrives meanwhile included, then the alarm for what
   * comes next. No alarm is set for the passes themselves: the runtime rings an alarm whose
   * handler failed or died again, so a pass cut short (its requests in flight) is resumed; the
   * alarm is written once at the end (`inAlarm`: the one that rang is spent, so none is cleared).
   */
  private async send(inAlarm: boolean): Promise<void> {
    const webhookId = endpointWebhook(this.ctx.storage.sql);
    if (webhookId === null) return;
    let settings: SendSettings;
    try {
      settings = { config: deliveryConfig(this.env), origins: allowedOrigins(this.env) };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      log('error', { msg: `${describeFailure(err)}; deliveries wait`, webhook_id: webhookId });
      await this.ctx.storage.setAlarm(Date.now() + WAIT_SECONDS * 1000);
      return;
    }
    const { config } = settings;
    const { schedule, notices, ordering, host, kept } = this;
    const recorded = (ids: string[]) => tellWatchers(this.ctx, 'recorded', ids);
    const endpoint = { webhookId, storage: this.ctx.storage, schedule, notices, ordering, recorded, host, kept };
    let next: number | null = null;
    this.passing = true;
    this.arrived = false;
    try {
      for (let pass = 0; pass < PASSES_PER_ALARM; pass++) {
        this.arrived = false;
        const fetcher: typeof fetch = (input, init) => fetch(input, init);
        next =
          webhookId === PLATFORM_ENDPOINT
            ? await sendPlatformDue(this.ctx.storage, this.env, config, fetcher)
            : await sendDue(endpoint, this.env, settings, fetcher);
        // Work that arrived during the pass may be due now: another pass, no alarm written for it.
        if (!this.arrived && (next === null || next > Date.now())) break;
      }
      // Archiving and retention wait on R2: still `passing`, so work that arrives meanwhile only
      // says so (an alarm it set would be overwritten by this one).
      const archiving = await this.archiveCold(webhookId, config.hotSeconds);
      const retention = await this.retain(retentionOf(this.ctx.storage, config.retentionDays));
      // Work that arrived during the last pass allowed, or since, may be due now.
      const wake = this.arrived ? Date.now() : earliest(next, archiving, retention);
      if (wake !== null) await this.ctx.storage.setAlarm(Math.max(wake, Date.now()));
      else if (!inAlarm) await this.ctx.storage.deleteAlarm();
    } finally {
      this.passing = false;
    }
    // Work that arrived while the alarm was being written: it rings now (what arrives after this
    // sets the alarm itself).
    if (this.arrived) await this.ctx.storage.setAlarm(Date.now());
  }

  /**
   * Moves one batch of the deliveries that ended more than `hotSeconds` ago to the archive (R2);
   * returns when it has work next (null: none). A full batch comes back at once; otherwise, at the
   * earliest when the oldest delivery here could be cold, and no sooner than the hot time (at most
   * an hour) after this pass, so deliveries still pending are not read again and again.
   */
  private async archiveCold(webhookId: string, hotSeconds: number): Promise<number | null> {
    const hotMs = hotSeconds * 1000;
    const now = Date.now();
    if (now < this.archiveAt) return this.archiveAt;
    const before = new Date(now - hotMs).toISOString();
    const { moved, full } = await archivePass(this.ctx.storage, this.env.HISTORY, webhookId, before);
    if (moved > 0 && full) return now;
    const oldest = oldestCreated(this.ctx.storage.sql);
    this.archiveAt = oldest === null ? 0 : Math.max(oldest + hotMs, now + Math.min(hotMs, HOUR_MS));
    return oldest === null ? null : this.archiveAt;
  }

  /**
   * Deletes what is past the retention, hot and archived, at most hourly; returns when it has
   * work next (null: none).
   */
  private async retain(days: number): Promise<number | null> {
    const keepMs = days * 86_400_000;
    const now = Date.now();
    if (now - this.purgedAt >= HOUR_MS) {
      const rows = purgeDeliveries(this.ctx.storage, new Date(now - keepMs).toISOString(), PURGE_ROWS);
      const cold = await purgeArchive(this.ctx.storage, this.env.HISTORY, now - keepMs, PURGE_ROWS);
      if (rows + cold.rows > 0)
        log('info', { msg: 'expired deliveries purged', rows, archived: cold.rows, objects: cold.objects });
      // A full step leaves more past the retention (a backlog, a shorter retention just set): the
      // next pass purges again at once.
      this.purgedAt = rows >= PURGE_ROWS || cold.rows >= PURGE_ROWS ? now - HOUR_MS : now;
    }
    const oldest = earliest(oldestCreated(this.ctx.storage.sql), oldestArchived(this.ctx.storage.sql));
    return oldest === null ? null : Math.max(oldest + keepMs, this.purgedAt + HOUR_MS);
  }
}
