// The provider of each destination type.
import type { ApiDestinationType } from '../../core/destinations';
import { eventBridgeProvider, sqsProvider } from './aws';
import { cloudflareQueueProvider } from './cloudflare-queue';
import { pubSubProvider } from './gcp-pubsub';
import type { Provider } from './provider';

export { httpProvider } from './http';
export type { OpenDestination, OutgoingMessage, Provider, SendOptions } from './provider';

export const PROVIDERS: Record<ApiDestinationType, Provider> = {
  cloudflare_queue: cloudflareQueueProvider,
  aws_sqs: sqsProvider,
  aws_eventbridge: eventBridgeProvider,
  gcp_pubsub: pubSubProvider,
};
