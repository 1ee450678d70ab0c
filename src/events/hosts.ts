// An application's budget at each host its webhooks are sent to (scheme, host and port), kept in
// its object (docs/deliveries.md): the schedules of the hosts its webhooks share, which of its
// webhooks share a host as the latest subscribers read found them (the others are told they are
// alone there, and take their host's slots themselves), and the object's calls to each endpoint,
// one after another, so that telling an endpoint its host is shared never overtakes a handover.
import { lastStart, newSchedule, type SendSchedule, takeSlots } from '../core/send-rate';
import type { NewDelivery } from './store/events';

/** Hosts whose schedules an application keeps before it forgets those idle for a second. */
const HOSTS_KEPT = 1000;

export class Hosts {
  /** Each host's starts, summed over the application's webhooks at it. */
  private readonly schedules = new Map<string, SendSchedule>();
  /**
   * The webhooks that share their host with another of the application's, as the latest
   * subscribers read found them; undefined until a publish brings one (handovers then say nothing).
   */
  private shared: Set<string> | undefined;
  /** Each endpoint's last call under way: the next one to it starts after it (see inTurn). */
  private readonly calls = new Map<string, Promise<void>>();

  /** `endpoints`: the object's binding of the endpoints' objects, read at each call. */
  constructor(private readonly endpoints: () => CloudflareBindings['ENDPOINTS']) {}

  /**
   * A host's budget for one sending pass: up to `wanted` start slots within the next second at
   * `rate` a second, shared by every webhook of the application at that host, so near-identical
   * URLs do not multiply what one application aims at one host. In memory only: nothing waits here
   * on the host, so a slow or dead host holds back no other.
   */
  slots(host: string, wanted: number, rate: number): { slots: number[]; next: number } {
    const now = Date.now();
    let schedule = this.schedules.get(host);
    if (schedule === undefined) {
      if (this.schedules.size >= HOSTS_KEPT) {
        for (const [name, kept] of this.schedules) if ((lastStart(kept) ?? 0) < now - 1000) this.schedules.delete(name);
      }
      schedule = newSchedule();
      this.schedules.set(host, schedule);
    }
    return takeSlots(schedule, wanted, rate, now);
  }

  /**
   * One handover to the webhook's endpoint, after the calls before it to that endpoint have ended
   * (so deliveries arrive in the order handed), saying whether the webhook is alone at its host:
   * when the latest subscribers read said so; unknown (it asks) otherwise.
   */
  handOver(webhookId: string, deliveries: NewDelivery[], retentionDays: number | undefined): Promise<void> {
    const alone = this.shared !== undefined && !this.shared.has(webhookId);
    return this.inTurn(webhookId, () =>
      this.endpoints().getByName(webhookId).handOver(webhookId, deliveries, retentionDays, alone),
    );
  }

  /**
   * Which webhooks share their host with another of the application's, as the latest subscribers
   * read found them: each handover tells its endpoint whether it is alone at its host (then it
   * takes its host's slots itself, asking nothing here). A webhook that joins a shared host is
   * told so (when `held`: its endpoint was ever handed deliveries) before any delivery of this
   * publish reaches an endpoint, in the order of its handovers (so no handover told before can
   * undo it).
   */
  async tell(shared: string[], held: (webhookId: string) => boolean): Promise<void> {
    const before = this.shared;
    this.shared = new Set(shared);
    const joined = shared.filter((id) => !before?.has(id) && held(id));
    await Promise.all(joined.map((id) => this.inTurn(id, () => this.endpoints().getByName(id).hostShared())));
  }

  /** Calls `webhookId`'s endpoint after the calls before it to that endpoint have ended. */
  private inTurn(webhookId: string, call: () => Promise<void>): Promise<void> {
    const before = this.calls.get(webhookId) ?? Promise.resolve();
    const made = before.then(call);
    const ended = made.catch(() => {});
    this.calls.set(webhookId, ended);
    void ended.then(() => {
      if (this.calls.get(webhookId) === ended) this.calls.delete(webhookId);
    });
    return made;
  }

  /** The calls to endpoints under way (each settles, failed or not). */
  underWay(): Promise<void>[] {
    return [...this.calls.values()];
  }

  /** Forgets the schedules and who shares a host (the application was erased); calls under way go on. */
  clear(): void {
    this.schedules.clear();
    this.shared = undefined;
  }
}
