// One Durable Object per endpoint (a webhook, by its id): the one place that knows how fast
// that endpoint is being sent to, whichever consumer invocation sends.
import { DurableObject } from 'cloudflare:workers';
import { type Bucket, takeTokens } from '../core/token-bucket';

/**
 * An endpoint's send rate: a token bucket of `rate` attempts a second with a burst of one second's
 * worth. Its state lives in memory: an object is evicted only after being idle, by which time its
 * bucket would be full again.
 */
export class Endpoint extends DurableObject<CloudflareBindings> {
  private bucket: Bucket | null = null;

  /** How many of `want` attempts may start now, at `rate` a second. */
  take(want: number, rate: number): number {
    const { granted, bucket } = takeTokens(this.bucket, rate, want, Date.now());
    this.bucket = bucket;
    return granted;
  }
}
