// Failures that are not about HTTP: the layers above decide how each is answered.

/** A missing or contradictory setting: the service fails closed (500) and logs `setting`. */
export class ConfigError extends Error {
  constructor(
    readonly setting: string,
    message: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/**
 * Storage could not do its part. `retryable`: a transient or overloaded store, worth trying again
 * shortly (an HTTP reply says 503 with Retry-After); otherwise a failure of the store itself (500).
 * `detail` is a short fixed text of ours, for the log.
 */
export class StorageFailure extends Error {
  constructor(
    readonly detail: string,
    readonly retryable: boolean,
    cause?: unknown,
  ) {
    super(detail, { cause });
    this.name = 'StorageFailure';
  }
}

/**
 * Input that breaks a rule of ours (a webhook URL the URL rules refuse). `detail` is a short
 * fixed text of ours saying which rule, never the input itself: an HTTP reply says 400 with it;
 * a delivery whose stored URL a tightened rule now refuses is never requested.
 */
export class InvalidInput extends Error {
  constructor(readonly detail: string) {
    super(detail);
    this.name = 'InvalidInput';
  }
}

/** What a failure says in a log line: its setting for a ConfigError, its name and message otherwise. */
export function describeFailure(err: unknown): string {
  if (err instanceof ConfigError) return `configuration error: ${err.setting}: ${err.message}`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}
