// A Cloudflare Queue, by the Queues HTTP push API: the payload and its message_id as a JSON message.
import { rebased } from '../../core/destinations';
import { attempt } from '../attempt';
import { type Provider, payloadWithId, rejected, replyJson } from './provider';

const encoder = new TextEncoder();

export const cloudflareQueueProvider: Provider = {
  async send(destination, message, { fetcher, timeoutMs, bases }) {
    const { account_id, queue_id } = destination.fields as Record<string, string>;
    const url = rebased(
      `https://api.cloudflare.com/client/v4/accounts/${account_id}/queues/${queue_id}/messages`,
      'cloudflare_queue',
      bases,
    );
    const body = encoder.encode(`{"body":${payloadWithId(message)},"content_type":"json"}`);
    const headers = { authorization: `Bearer ${destination.credentials.api_token}` };
    const result = await attempt({ url, body, headers, timeoutMs, secrets: destination.secrets }, fetcher);
    if (result.error !== null || result.status !== 200) return result;
    return replyJson(result)?.success === true ? result : rejected(result);
  },
};
