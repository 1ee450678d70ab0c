// Queues: a producer that keeps what is sent, and the Worker's consumer run on chosen batches
// (the events queue, the only one it consumes).
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import worker from '../../src/index';

export const EVENTS_QUEUE = 'nft-webhook-events';

/** A queue producer that keeps what is sent to it. */
export function fakeQueue() {
  const sent: unknown[] = [];
  return {
    sent,
    binding: {
      send: async (body: unknown) => {
        sent.push(body);
      },
      sendBatch: async (messages: Iterable<{ body: unknown }>) => {
        for (const m of messages) sent.push(m.body);
      },
    } as unknown as Queue,
  };
}

let messageSeq = 0;

/** Runs the Worker's queue consumer on a batch of `bodies` (from `queue`) and returns what it did with them. */
export async function consume(
  queue: string,
  bodies: unknown[],
  overrides: Record<string, unknown> = {},
  { attempts = 1, ids }: { attempts?: number; ids?: string[] } = {},
) {
  const messages = bodies.map((body, i) => ({
    id: ids?.[i] ?? `msg-${++messageSeq}`,
    timestamp: new Date(),
    attempts,
    body,
  }));
  const batch = createMessageBatch(queue, messages);
  // getQueueResult does not report a retry's delay: the calls themselves are watched.
  const retries: Record<string, number | undefined> = {};
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    m.retry = (options?: QueueRetryOptions) => {
      retries[m.id] = options?.delaySeconds;
      retry(options);
    };
  }
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...overrides } as CloudflareBindings);
  return { result: await getQueueResult(batch, ctx), ids: messages.map((m) => m.id), retries };
}
