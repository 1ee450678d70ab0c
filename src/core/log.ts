/**
 * Writes one JSON line to the Workers log. Only values of ours go in: never a token, a secret, a
 * header or a query string.
 */
export function log(level: 'error' | 'warn' | 'info', fields: Record<string, unknown>, cause?: unknown) {
  const line: Record<string, unknown> = { level, ...fields };
  if (cause !== undefined) {
    line.error = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    // What it wraps (a StorageFailure's D1 error), so that the line says what went wrong.
    const inner = cause instanceof Error ? cause.cause : undefined;
    if (inner !== undefined) line.cause = inner instanceof Error ? `${inner.name}: ${inner.message}` : String(inner);
  }
  try {
    console[level](JSON.stringify(line));
  } catch {
    // Logging must never turn a reply into a failure.
  }
}
