// An endpoint's send rate as a schedule of start times (the generic cell rate algorithm, a token
// bucket that can promise): `rate` starts a second, with a burst of one second's worth. A start that
// cannot be now is given a slot of its own in the future, kept until it is claimed, so a backlog
// is served in order at the rate, each delivery held back once.

/** The schedule of one endpoint: when the next start is due, and the slots promised. */
export interface SendSchedule {
  /** The theoretical arrival time of the next start (ms). */
  tat: number;
  /** Slots promised to held-back deliveries, by delivery id (ms). */
  promised: Map<string, number>;
}

export const newSchedule = (): SendSchedule => ({ tat: 0, promised: new Map() });

/** Promised slots unclaimed this long after their time are forgotten (the delivery went elsewhere). */
const FORGET_AFTER_MS = 10 * 60_000;

/**
 * Whether delivery `id` may start at `now` at `rate` a second: 0 when it may, else the
 * milliseconds until its slot. A delivery that comes back for its promised slot starts then,
 * never earlier; a new one starts now while the burst allows, else is promised the next free slot.
 */
export function admit(schedule: SendSchedule, id: string, rate: number, now: number): number {
  const slot = schedule.promised.get(id);
  if (slot !== undefined) {
    if (slot > now) return slot - now;
    schedule.promised.delete(id);
    return 0;
  }
  const interval = 1000 / rate;
  const tolerance = 1000 - interval;
  const at = Math.max(now, schedule.tat - tolerance);
  schedule.tat = Math.max(schedule.tat, at) + interval;
  if (at <= now) return 0;
  schedule.promised.set(id, at);
  return at - now;
}

/** Forgets promised slots long past (their deliveries ended, or were cancelled). */
export function forgetStale(schedule: SendSchedule, now: number): void {
  for (const [id, slot] of schedule.promised) if (slot < now - FORGET_AFTER_MS) schedule.promised.delete(id);
}
