import type { Context } from 'hono';
import { StorageFailure } from '../core/errors';
import type { AppEnv } from '../http/app-env';
import { jsonObject, readJsonBody } from '../http/body';
import { ApiFailure, badInput, retryLater, STORAGE_RETRY_AFTER, success } from '../http/envelope';
import { eventToStore, type NewEvent, parseEvent } from './event';
import { MAX_EVENT_BYTES, publishEvents } from './publish';
import type { EventToStore } from './store/events';

/** Largest batch body accepted, in bytes. */
export const MAX_BATCH_BYTES = 1024 * 1024;
/** Most events one batch may carry. */
export const MAX_BATCH_EVENTS = 100;

const encoder = new TextEncoder();

/**
 * A batch's events, validated whole: each one an event object with its `id` (so that a batch sent
 * again is safe), as large as a single publish allows (its JSON, numbers as sent, at most 64 KiB);
 * the first invalid one is a 400 naming its index, and nothing is stored.
 */
export function batchEvents(body: unknown): NewEvent[] {
  const { events } = jsonObject(body);
  if (!Array.isArray(events) || events.length === 0 || events.length > MAX_BATCH_EVENTS) {
    throw badInput(`events must be an array of 1 to ${MAX_BATCH_EVENTS} events`);
  }
  return events.map((value, i) => {
    try {
      const event = parseEvent(value);
      if (event.id === undefined) throw badInput('id is required');
      if (encoder.encode(JSON.stringify(value)).byteLength > MAX_EVENT_BYTES) {
        throw badInput(`event larger than ${MAX_EVENT_BYTES} bytes`);
      }
      return event;
    } catch (err) {
      if (err instanceof ApiFailure && err.status === 400) throw badInput(`events[${i}]: ${err.detail}`);
      throw err;
    }
  });
}

/**
 * POST /v1.0/platform/nft/events {"events": [...]}: 1 to 100 events, of one application or several,
 * stored with their deliveries at their applications' objects (after one D1 read); 202 with their
 * ids in the order sent once every one is stored. An `id` repeated in the batch is one event; an `id` its application
 * published before answers that event's id, so the same batch sent again stores nothing twice. A
 * storage failure is a 503 with Retry-After: each application's events are stored all or none (its
 * object's transaction); another application's may be stored already, and the batch sent again
 * stores nothing twice.
 */
export async function publishBatch(c: Context<AppEnv>): Promise<Response> {
  const { value } = await readJsonBody(c.req.raw, { maxBytes: MAX_BATCH_BYTES, exactNumbers: true });
  const events = batchEvents(value);
  // One event per application and id; each sent event points at its one.
  const unique = new Map<string, number>();
  const toStore: EventToStore[] = [];
  const slot = events.map((event) => {
    const key = JSON.stringify([event.appId, event.id]);
    let at = unique.get(key);
    if (at === undefined) {
      at = toStore.push(eventToStore(event, null)) - 1;
      unique.set(key, at);
    }
    return at;
  });
  let ids: string[];
  try {
    ids = await publishEvents(c, toStore);
  } catch (err) {
    if (err instanceof StorageFailure) throw retryLater(503, err.detail, STORAGE_RETRY_AFTER, err.cause);
    throw err;
  }
  return success(c, { status: 202, value: `{"event_ids":${JSON.stringify(slot.map((at) => ids[at]))}}` });
}
