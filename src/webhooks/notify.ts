// A change that stops or changes sending (a webhook disabled, deleted, moved to another URL, its
// signing secret rotated) is told to the webhook's endpoint object once D1 has it, before the
// operation answers: a pass under way reads the webhook again before its next attempt starts. The
// application's object relays it, only to an endpoint it ever handed a delivery to: an endpoint
// object is not made just to be told (a fresh object costs more than the operation itself).
import type { Context } from 'hono';
import { log } from '../core/log';
import type { AppEnv } from '../http/app-env';
import { requestId } from '../http/envelope';

/**
 * Tells webhook `webhookId`'s endpoint object that the webhook changed. Never fails the
 * operation, whose reply stays as it is: should the object not hear it, the change still holds
 * from its next pass on, which reads the webhook from D1 (logged).
 */
export async function tellEndpoint(c: Context<AppEnv>, webhookId: string): Promise<void> {
  try {
    // Through the application's object, which knows whether the endpoint ever had a delivery.
    await c.env.APPLICATIONS.getByName(c.get('appId')).webhookChanged(webhookId);
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
