// The event object (one shape for the Queue and for HTTP): {"app_id", "type", "data", "id"?}.
import { isEventType, isOperationalType } from '../core/event-types';
import { isAppId, MAX_APP_ID_LENGTH } from '../core/text';
import { badInput } from '../http/envelope';
import type { EventToStore } from './store/events';

/** An event as it is stored: whose webhooks receive it, its type, and the body every attempt sends. */
export interface NewEvent {
  appId: string;
  type: string;
  /** The publisher's id: publishing the same id for the same application is one event. */
  id?: string;
  /** `data` as JSON text (numbers keep the digits they were sent with). */
  data: string;
}

// A number kept as its source text (see readJsonBody) is an object too, but not a JSON object.
const isRawJson = (value: object) => (JSON as JSON & { isRawJSON?(v: unknown): boolean }).isRawJSON?.(value) === true;

const PUBLISHER_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `type` as a publisher (or a test event) may name it: an event type, and none of the operational
 * types, which only the service makes. Throws InvalidInput (400) otherwise.
 */
export function publishedType(type: unknown): string {
  if (!isEventType(type)) throw badInput('type must be 1 to 64 letters, digits, _ or .');
  if (isOperationalType(type)) throw badInput(`type ${type} is reserved for the service's operational events`);
  return type;
}

/**
 * Checks an event object; unknown fields are ignored. Throws a 400 failure saying what is wrong.
 * (From the queue, the same failure drops the message with a log line.)
 */
export function parseEvent(value: unknown): NewEvent {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw badInput('event must be a JSON object');
  const { app_id: appId, type: named, data, id } = value as Record<string, unknown>;
  if (typeof appId !== 'string' || !isAppId(appId) || [...appId].length > MAX_APP_ID_LENGTH) {
    throw badInput(
      `app_id must be a string of 1 to ${MAX_APP_ID_LENGTH} characters, without control characters or lone surrogates`,
    );
  }
  const type = publishedType(named);
  if (typeof data !== 'object' || data === null || Array.isArray(data) || isRawJson(data)) {
    throw badInput('data must be a JSON object');
  }
  if (id !== undefined && (typeof id !== 'string' || !PUBLISHER_ID.test(id))) {
    throw badInput('id must be 1 to 64 letters, digits, _ or -');
  }
  let json: string;
  try {
    json = JSON.stringify(data);
  } catch (err) {
    // Too deep to write (a queue message's object; HTTP bodies are refused before this).
    if (err instanceof RangeError) throw badInput('data is nested too deeply');
    throw err;
  }
  return { appId, type, id: id as string | undefined, data: json };
}

/** The exact body every attempt of an event sends. */
export const eventPayload = (type: string, timestamp: string, data: string) =>
  `{"type":${JSON.stringify(type)},"timestamp":"${timestamp}","data":${data}}`;

/** A new event id: what receivers see as `webhook-id` and deduplicate on. */
export const newEventId = () => `evt_${crypto.randomUUID().replaceAll('-', '')}`;

/**
 * An event as stored now. `fallbackKey` makes it idempotent when the publisher gave no id (the
 * queue message's id); null: a new event every time.
 */
export function eventToStore(event: NewEvent, fallbackKey: string | null): EventToStore {
  const createdAt = new Date().toISOString();
  return {
    eventId: newEventId(),
    appId: event.appId,
    sourceKey: event.id === undefined ? fallbackKey : `id:${event.id}`,
    type: event.type,
    payload: eventPayload(event.type, createdAt, event.data),
    createdAt,
  };
}
