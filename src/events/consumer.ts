import { StorageFailure } from '../core/errors';
import { log } from '../core/log';
import { parseJsonText } from '../http/body';
import { ApiFailure } from '../http/envelope';
import { retryD1 } from '../platform/d1';
import { readSubscribers } from '../webhooks/store/subscribers';
import { eventToStore, parseEvent } from './event';
import { publishersOf, publishToSubscribers } from './fan-out';
import type { EventToStore, StoredEvent } from './store/events';

/**
 * How long a message waits when storage cannot store it: 10 s, doubling with each attempt, at most an
 * hour, so the queue's 100 retries span days of outage before it gives up on a message.
 */
export const storageWaitSeconds = (attempts: number) => Math.min(10 * 2 ** Math.max(0, attempts - 1), 3600);

/**
 * The events queue's consumer: the platform's own Workers publish here. Every valid event of the
 * batch is stored with its deliveries at its application's object, as HTTP publishing does (a
 * message without `id` is made idempotent by its own message id, as the queue may deliver it
 * twice), and the batch is acknowledged. A malformed message is dropped with a log line, never retried.
 */
export async function consumeEvents(batch: MessageBatch<unknown>, env: CloudflareBindings): Promise<void> {
  const valid: { message: Message<unknown>; event: EventToStore }[] = [];
  for (const message of batch.messages) {
    try {
      // A message sent as JSON text is read like an HTTP body: depth limit, exact numbers.
      const body = typeof message.body === 'string' ? parseJsonText(message.body, true) : message.body;
      valid.push({ message, event: eventToStore(parseEvent(body), `msg:${message.id}`) });
    } catch (err) {
      const reason = err instanceof ApiFailure ? err.detail : 'unreadable message body';
      log('warn', { msg: 'dropped a malformed event message', message_id: message.id, reason });
      message.ack();
    }
  }
  if (valid.length === 0) return;
  const events = valid.map((v) => v.event);
  let stored: StoredEvent[];
  try {
    const read = await retryD1(() => readSubscribers(env.DB, publishersOf(events)));
    stored = await publishToSubscribers(env, events, read);
  } catch (err) {
    log(
      'error',
      { msg: 'could not store events; the batch is retried' },
      err instanceof StorageFailure ? err.cause : err,
    );
    for (const { message } of valid) message.retry({ delaySeconds: storageWaitSeconds(message.attempts) });
    return;
  }
  for (const { message } of valid) message.ack();
  log('info', { msg: 'events stored', events: valid.length, event_ids: stored.map((s) => s.eventId) });
}
