// The deliveries queue of the release before: it queued one message per delivery. Deliveries are
// now sent by their endpoints' objects, and the Cron Trigger moves the ones that release stored in
// D1 (src/deliveries/move.ts), so a message left in the queue is only acknowledged. The queue and
// this consumer go in a later release, once the move is over everywhere.
import { log } from '../core/log';

export function consumeDeliveries(batch: MessageBatch<unknown>): void {
  batch.ackAll();
  log('info', {
    msg: 'acknowledged messages of the old deliveries queue; the Cron Trigger moves their deliveries',
    messages: batch.messages.length,
  });
}
