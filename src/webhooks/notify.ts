// A webhook change is told to its application's object once D1 has it, before the operation
// answers. Every change of who receives what (a webhook created, enabled or disabled, deleted, its
// event types or filter changed) is noted there by its audit record's id: a publish that read the
// subscribers before it reads them again, so a change that has answered applies to every event
// stored after it. A change that stops or changes sending (a webhook disabled, deleted, moved to
// another URL, its rate or ordering changed, its signing secret rotated) is relayed to the
// webhook's endpoint object, only if the application ever handed it a delivery (an endpoint object
// is not made just to be told: a fresh object costs more than the operation itself); a pass under
// way reads the webhook again before its next attempt starts. A deletion also deletes the
// webhook's value set there, in the same call.
import type { Context } from 'hono';
import type { OperationalType } from '../core/event-types';
import { log } from '../core/log';
import type { AppEnv } from '../http/app-env';
import { requestId } from '../http/envelope';

/** What changed of a webhook, as its application's object is told. */
export interface WebhookChange {
  /** The change's audit record id; none when the operation recorded nothing now. */
  auditId?: number;
  /** It stops or changes sending: the endpoint's object is told too. */
  sending?: boolean;
  /** The webhook is deleted: its value set goes. */
  deleted?: boolean;
}

/**
 * Tells webhook `webhookId`'s application object of `change`. Never fails the operation, whose
 * reply stays as it is: should the object not hear it, the change still holds for every publish
 * that reads D1 after it and from the endpoint's next pass on (which reads the webhook from D1),
 * and a deleted webhook's set stays behind unread (its id is never given again, and only an
 * existing webhook's set is read); a log line says so.
 */
export async function tellApplication(c: Context<AppEnv>, webhookId: string, change: WebhookChange): Promise<void> {
  try {
    await c.env.APPLICATIONS.getByName(c.get('appId')).webhookChanged(webhookId, change);
  } catch (err) {
    log(
      'warn',
      {
        request_id: requestId(c),
        msg: "could not tell the webhook's application object of the change; publishes and passes read it from D1",
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
  // Called inside the async function, so that nothing it throws can reach the operation's reply.
  const told = (async () =>
    c.env.APPLICATIONS.getByName(appId).operational([
      { appId, webhookId, type, data: { webhook_id: webhookId, ...data } },
    ]))().catch((err) =>
    log(
      'warn',
      { request_id: requestId(c), msg: 'could not hand over an operational event', type, webhook_id: webhookId },
      err,
    ),
  );
  c.executionCtx.waitUntil(told);
}
