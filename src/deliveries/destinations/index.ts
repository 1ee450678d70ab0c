// The provider of each destination type.
import type { ApiDestinationType } from '../../core/destinations';
import { eventBridgeProvider, sqsProvider } from './aws';
import { cloudflareQueueProvider } from './cloudflare-queue';
import { pubSubProvider } from './gcp-pubsub';
import { type Provider, refusalOf, throttledOf } from './provider';

export { httpProvider } from './http';
export type { OpenDestination, OutgoingMessage, Provider, SendOptions } from './provider';

/** An API's provider whose results name its refusals and its throttling (see refusalOf, throttledOf). */
const naming = (provider: Provider): Provider => ({
  async send(destination, message, options) {
    const result = await provider.send(destination, message, options);
    if (result.status !== null && result.status >= 200 && result.status < 300 && result.error === null) return result;
    if (throttledOf(result)) return { ...result, throttled: true };
    const refused = refusalOf(result);
    return refused === undefined ? result : { ...result, refused };
  },
});

export const PROVIDERS: Record<ApiDestinationType, Provider> = {
  cloudflare_queue: naming(cloudflareQueueProvider),
  aws_sqs: naming(sqsProvider),
  aws_eventbridge: naming(eventBridgeProvider),
  gcp_pubsub: naming(pubSubProvider),
};
