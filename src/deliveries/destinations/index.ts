// The provider of each destination type.
import type { ApiDestinationType } from '../../core/destinations';
import { succeeded } from '../schedule';
import { eventBridgeProvider, sqsProvider } from './aws';
import { cloudflareQueueProvider } from './cloudflare-queue';
import { pubSubProvider } from './gcp-pubsub';
import { type Provider, refusalOf, replyJson, throttledOf } from './provider';

export { httpProvider } from './http';
export type { OpenDestination, OutgoingMessage, Provider, SendOptions } from './provider';

/** An API's provider whose results name its refusals and its throttling (see refusalOf, throttledOf). */
const naming = (provider: Provider): Provider => ({
  async send(destination, message, options) {
    const result = await provider.send(destination, message, options);
    if (succeeded(result)) return result;
    const reply = replyJson(result);
    if (throttledOf(result, reply)) return { ...result, throttled: true };
    const refused = refusalOf(result, reply);
    return refused === undefined ? result : { ...result, refused };
  },
});

export const PROVIDERS: Record<ApiDestinationType, Provider> = {
  cloudflare_queue: naming(cloudflareQueueProvider),
  aws_sqs: naming(sqsProvider),
  aws_eventbridge: naming(eventBridgeProvider),
  gcp_pubsub: naming(pubSubProvider),
};
