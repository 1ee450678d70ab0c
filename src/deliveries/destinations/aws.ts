// Amazon SQS (SendMessage) and EventBridge (PutEvents), in their JSON protocols, signed with
// Signature Version 4 by aws4fetch: one request per attempt (retries: 0).
import { AwsClient } from 'aws4fetch';
import { rebased, sqsRegion } from '../../core/destinations';
import { attempt } from '../attempt';
import { type OpenDestination, type Provider, payloadWithId, rejected, replyJson, type SendOptions } from './provider';

const encoder = new TextEncoder();
/** SigV4 signing keys (one per secret, day, region and service), kept by the isolate: derived once a day, not per attempt. */
const signingKeys = new Map<string, ArrayBuffer>();
const SIGNING_KEYS_MAX = 1000;

async function signedAttempt(
  destination: OpenDestination,
  service: 'sqs' | 'events',
  region: string,
  url: string,
  headers: Record<string, string>,
  body: string,
  { fetcher, timeoutMs }: SendOptions,
) {
  const client = new AwsClient({
    accessKeyId: destination.fields.access_key_id as string,
    secretAccessKey: destination.credentials.secret_access_key as string,
    service,
    region,
    retries: 0,
    cache: signingKeys,
  });
  if (signingKeys.size > SIGNING_KEYS_MAX) signingKeys.clear();
  const signed = await client.sign(url, { method: 'POST', headers, body });
  return attempt(
    {
      url: signed.url,
      body: encoder.encode(body),
      headers: Object.fromEntries(signed.headers),
      timeoutMs,
      secrets: destination.secrets,
    },
    fetcher,
  );
}

/** SQS: the exact body, the signature headers as String attributes; FIFO queues grouped by webhook. */
export const sqsProvider: Provider = {
  send(destination, message, options) {
    const queueUrl = destination.fields.queue_url as string;
    const region = sqsRegion(queueUrl);
    const attributes: Record<string, { DataType: 'String'; StringValue: string }> = {};
    for (const [name, value] of Object.entries(message.signature))
      attributes[name] = { DataType: 'String', StringValue: value };
    const request: Record<string, unknown> = {
      QueueUrl: queueUrl,
      MessageBody: message.payload,
      MessageAttributes: attributes,
    };
    if (queueUrl.endsWith('.fifo')) {
      request.MessageGroupId = message.webhookId;
      request.MessageDeduplicationId = message.messageId;
    }
    const url = rebased(`https://sqs.${region}.amazonaws.com/`, 'aws_sqs', options.bases);
    const headers = { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': 'AmazonSQS.SendMessage' };
    return signedAttempt(destination, 'sqs', region, url, headers, JSON.stringify(request), options);
  },
};

/** EventBridge: one entry, the payload and its message_id as Detail, the event's type as DetailType. */
export const eventBridgeProvider: Provider = {
  async send(destination, message, options) {
    const { region, source, event_bus } = destination.fields as Record<string, string>;
    const type = (JSON.parse(message.payload) as { type: string }).type;
    const entry = { Source: source, DetailType: type, Detail: payloadWithId(message), EventBusName: event_bus };
    const url = rebased(`https://events.${region}.amazonaws.com/`, 'aws_eventbridge', options.bases);
    const headers = { 'content-type': 'application/x-amz-json-1.1', 'x-amz-target': 'AWSEvents.PutEvents' };
    const result = await signedAttempt(
      destination,
      'events',
      region as string,
      url,
      headers,
      JSON.stringify({ Entries: [entry] }),
      options,
    );
    if (result.error !== null || result.status !== 200) return result;
    // A 200 whose entry failed (its ErrorCode in the kept reply) is a failed attempt.
    const reply = replyJson(result);
    return reply !== null && reply.FailedEntryCount === 0 ? result : rejected(result);
  },
};
