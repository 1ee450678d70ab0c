// A send rate as a sliding window of start times: at most `rate` starts in any second. A start
// that cannot be now is given a slot of its own in the future, kept until it is claimed, so a
// backlog is served in order at the rate, each delivery held back once. Unlike a token bucket
// (whose burst after an idle second lets up to twice the rate through within one second), no
// window of one second ever sees more than `rate` starts (`rate` + 1 when both ends count).

/** The starts of one endpoint (or host): when the last ones were, and the slots promised. */
export interface SendSchedule {
  /** The latest starts, oldest first (ms), promised slots included: at most MAX_RATE of them. */
  starts: number[];
  /** Slots promised to held-back deliveries, by delivery id (ms). */
  promised: Map<string, number>;
}

export const newSchedule = (starts: number[] = []): SendSchedule => ({ starts, promised: new Map() });

/** Starts kept: the most any rate may allow in a second. */
const MAX_RATE = 1000;
const WINDOW_MS = 1000;
/** Promised slots unclaimed this long after their time are forgotten (the delivery went elsewhere). */
const FORGET_AFTER_MS = 10 * 60_000;

/** The earliest time a new start may take at `rate` a second (never before `now`). */
function nextStart(schedule: SendSchedule, rate: number, now: number): number {
  const { starts } = schedule;
  const limit = Math.max(1, Math.min(rate, MAX_RATE));
  const bound = starts.length >= limit ? (starts[starts.length - limit] as number) + WINDOW_MS : now;
  return Math.max(now, bound);
}

function take(schedule: SendSchedule, at: number): void {
  schedule.starts.push(at);
  if (schedule.starts.length > MAX_RATE) schedule.starts.splice(0, schedule.starts.length - MAX_RATE);
}

/**
 * Whether delivery `id` may start at `now` at `rate` a second: 0 when it may, else the
 * milliseconds until its slot. A delivery that comes back for its promised slot starts then,
 * never earlier; a new one starts now while the window allows, else is promised the next free slot.
 */
export function admit(schedule: SendSchedule, id: string, rate: number, now: number): number {
  const slot = schedule.promised.get(id);
  if (slot !== undefined) {
    if (slot > now) return slot - now;
    schedule.promised.delete(id);
    return 0;
  }
  const at = nextStart(schedule, rate, now);
  take(schedule, at);
  if (at <= now) return 0;
  schedule.promised.set(id, at);
  return at - now;
}

/** How late after its slot a start may be: a host's slots are spaced for it (see takeSlots). */
export const HOST_SLACK_MS = 250;
/** Slots a host hands out at once (a pass's connections); after them, the slots are evenly spaced. */
const HOST_BURST = 6;
/** How far ahead a pass is given a host's slots. */
export const HOST_HORIZON_MS = 1000;

/**
 * When the next host slot is free at `rate` (never before `now`): the window's bound, spaced for
 * HOST_SLACK_MS, and at most HOST_BURST slots at once, then evenly, so that a pass is never handed
 * more than it can start within the slack (the window holds either way).
 */
function nextSlot(schedule: SendSchedule, rate: number, now: number): number {
  const { starts } = schedule;
  const limit = Math.max(1, Math.min(rate, MAX_RATE));
  const span = WINDOW_MS + HOST_SLACK_MS;
  const window = starts.length >= limit ? (starts[starts.length - limit] as number) + span : now;
  const even =
    starts.length >= HOST_BURST ? (starts[starts.length - HOST_BURST] as number) + (HOST_BURST * span) / limit : now;
  return Math.max(now, window, even);
}

/**
 * Up to `count` start slots of a host at `rate` a second from `now` on, within HOST_HORIZON_MS,
 * taken from its schedule (a host's budget handed to one pass), and when the host has room again
 * after them. A start may be up to HOST_SLACK_MS late for its slot: slots `rate` apart are spaced
 * a second and the slack, so starts anywhere in [slot, slot + slack] still keep every second
 * to `rate`.
 */
export function takeSlots(
  schedule: SendSchedule,
  count: number,
  rate: number,
  now: number,
): { slots: number[]; next: number } {
  const slots: number[] = [];
  while (slots.length < count) {
    const at = nextSlot(schedule, rate, now);
    if (at > now + HOST_HORIZON_MS) break;
    take(schedule, at);
    slots.push(at);
  }
  return { slots, next: nextSlot(schedule, rate, now) };
}

/** The latest start a schedule holds (ms), or null when it holds none. */
export const lastStart = (schedule: SendSchedule): number | null => schedule.starts.at(-1) ?? null;

/** Forgets promised slots long past (their deliveries ended, or were cancelled). */
export function forgetStale(schedule: SendSchedule, now: number): void {
  for (const [id, slot] of schedule.promised) if (slot < now - FORGET_AFTER_MS) schedule.promised.delete(id);
}
