// One Durable Object per endpoint (a webhook, by its id): the one place that knows how fast that
// endpoint is being sent to, whichever consumer invocation sends.
import { DurableObject } from 'cloudflare:workers';
import { admit, forgetStale, newSchedule } from '../core/send-rate';

/**
 * An endpoint's send rate. Its schedule lives in memory: an object is evicted only after being
 * idle, and a schedule idle that long has nothing left to hold back.
 */
export class Endpoint extends DurableObject<CloudflareBindings> {
  private schedule = newSchedule();

  /**
   * For each delivery (by id), in order: 0 when it may be attempted now at `rate` a second, else
   * the milliseconds until the slot it is promised.
   */
  admit(ids: string[], rate: number): number[] {
    const now = Date.now();
    forgetStale(this.schedule, now);
    return ids.map((id) => admit(this.schedule, id, rate, now));
  }
}
