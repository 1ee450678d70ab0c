// What every destination type does for the sending pass: send one signed message, and say what
// came of it as an attempt's result (status, the first 1 KiB of the reply, whether it failed).
// The pass retries by its schedule; a provider never retries inside an attempt, so the log counts
// what reached the API. Each type's fields and credentials are described in core/destinations.ts.
import type { ApiBase, DestinationFields } from '../../core/destinations';
import type { AttemptResult } from '../attempt';

/** One message as the pass signed it: the same for every type. */
export interface OutgoingMessage {
  webhookId: string;
  /** The `webhook-id` (the event's id). */
  messageId: string;
  /** The payload's JSON text, exactly what an HTTP endpoint receives. */
  payload: string;
  body: Uint8Array;
  /** webhook-id, webhook-timestamp, webhook-signature. */
  signature: Record<string, string>;
  /** The webhook is FIFO: its messages carry the webhook's id as their group or ordering key. */
  fifo: boolean;
}

/** What sending needs beyond the message. */
export interface SendOptions {
  fetcher: typeof fetch;
  timeoutMs: number;
  /** The operator's stand-ins (DESTINATION_API_BASES); empty: the APIs' own hosts. */
  bases: ReadonlyMap<ApiBase, string>;
}

/** A destination with its credentials opened, as one attempt sends to it. */
export interface OpenDestination {
  fields: DestinationFields;
  credentials: Record<string, string>;
  /** Its custom headers (HTTP), sensitive ones opened. */
  headers: Record<string, string>;
  /** What was opened (credentials, sensitive headers' values): masked in any reply that quotes it. */
  secrets: string[];
}

export interface Provider {
  send(destination: OpenDestination, message: OutgoingMessage, options: SendOptions): Promise<AttemptResult>;
}

/** The payload object itself plus `message_id` (EventBridge, Cloudflare Queues), as JSON text. */
export function payloadWithId(message: OutgoingMessage): string {
  const text = message.payload.trimEnd();
  return `${text.slice(0, -1)},"message_id":${JSON.stringify(message.messageId)}}`;
}

/** A result the API answered 2xx but whose reply says the message was not taken. */
export const rejected = (result: AttemptResult): AttemptResult => ({ ...result, error: 'rejected' });

/** The reply's JSON, or null when the kept part is not JSON. */
export function replyJson(result: AttemptResult): Record<string, unknown> | null {
  try {
    const value = JSON.parse(result.body ?? '');
    return value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}
