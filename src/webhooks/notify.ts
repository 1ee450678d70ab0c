// A change that stops or changes sending (a webhook disabled, deleted, moved to another URL, its
// signing secret rotated) is told to the webhook's endpoint object once D1 has it, before the
// operation answers: a pass under way reads the webhook again before its next attempt starts. The
// application's object relays it, only to an endpoint it ever handed a delivery to: an endpoint
// object is not made just to be told (a fresh object costs more than the operation itself). A
// deletion also deletes the webhook's value set there, in the same call.
import type { Context } from 'hono';
import type { OperationalType } from '../core/event-types';
import { log } from '../core/log';
import type { AppEnv } from '../http/app-env';
import { requestId } from '../http/envelope';

/**
 * Tells webhook `webhookId`'s endpoint object that the webhook changed (`deleted`: and drops its
 * value set). Never fails the operation, whose reply stays as it is: should the object not hear
 * it, the change still holds from the endpoint's next pass on, which reads the webhook from D1,
 * and a deleted webhook's set stays behind unread (its id is never given again, and only an
 * existing webhook's set is read); a log line says so.
 */
export async function tellEndpoint(c: Context<AppEnv>, webhookId: string, deleted = false): Promise<void> {
  try {
    // Through the application's object, which knows whether the endpoint ever had a delivery.
    await c.env.APPLICATIONS.getByName(c.get('appId')).webhookChanged(webhookId, deleted);
  } catch (err) {
    log(
      'warn',
      {
        request_id: requestId(c),
        msg: "could not tell the webhook's endpoint of the change; its next pass reads it from D1",
        webhook_id: webhookId,
      },
      err,
    );
  }
}

/**
 * An operational event about webhook `webhookId` (disabled by the application, its secret rotated),
 * handed to the application's object, which makes and delivers it, after the reply: the operation
 * neither waits for it nor fails with it, and makes no D1 round trip for it (a log line says when it
 * could not be handed over). `data` is the event's data besides `webhook_id` (`url: null`: the
 * object reads it).
 */
export function tellOperational(
  c: Context<AppEnv>,
  webhookId: string,
  type: OperationalType,
  data: Record<string, unknown>,
): void {
  const appId = c.get('appId');
  const told = c.env.APPLICATIONS.getByName(appId)
    .operational([{ appId, webhookId, type, data: { webhook_id: webhookId, ...data } }])
    .catch((err) =>
      log(
        'warn',
        { request_id: requestId(c), msg: 'could not hand over an operational event', type, webhook_id: webhookId },
        err,
      ),
    );
  c.executionCtx.waitUntil(told);
}
