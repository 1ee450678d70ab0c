/** A token bucket: the tokens it held at `at` (ms). */
export interface Bucket {
  tokens: number;
  at: number;
}

/**
 * Takes up to `want` tokens at `now` from a bucket that refills `rate` tokens a second and holds
 * at most one second's worth (`rate`): a burst of `rate`, then `rate` a second. A new bucket is
 * full. Returns how many were granted and the bucket after.
 */
export function takeTokens(
  bucket: Bucket | null,
  rate: number,
  want: number,
  now: number,
): { granted: number; bucket: Bucket } {
  const held = bucket === null ? rate : Math.min(rate, bucket.tokens + (Math.max(0, now - bucket.at) / 1000) * rate);
  const granted = Math.max(0, Math.min(want, Math.floor(held)));
  return { granted, bucket: { tokens: held - granted, at: now } };
}
