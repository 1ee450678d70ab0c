// A delivery's page, what was sent: the request's headers (webhook-id, webhook-timestamp, and the
// form of webhook-signature: never a signature, never a secret) and its body exactly as every
// attempt sent it. And a response body as text, an empty one said in words.
import type { Attempt, Delivery } from './api';

/** The Unix seconds an attempt sent as `webhook-timestamp` (its time, as the service recorded it). */
const timestampOf = (attempt: Attempt) => String(Math.floor(Date.parse(attempt.attempted_at) / 1000));

export function SentRequest({ delivery }: { delivery: Delivery }) {
  const latest = (delivery.attempt_log ?? []).at(-1);
  return (
    <section aria-labelledby="request-title">
      <h2 id="request-title">Request</h2>
      <p class="hint">
        What each attempt sent: a POST to the endpoint's URL with these headers and this body. Every attempt sends the
        same body and webhook-id; its own time and signatures.
      </p>
      <dl class="facts request-headers" aria-label="Request headers">
        <dt>
          <code>webhook-id</code>
        </dt>
        <dd>
          <code>{delivery.event_id}</code>
        </dd>
        <dt>
          <code>webhook-timestamp</code>
        </dt>
        <dd>
          {latest ? (
            <>
              <code>{timestampOf(latest)}</code> (attempt {latest.attempt}, in Unix seconds)
            </>
          ) : (
            'The time of each attempt, in Unix seconds (no attempt yet).'
          )}
        </dd>
        <dt>
          <code>webhook-signature</code>
        </dt>
        <dd>
          <code>v1,&lt;base64 of HMAC-SHA256&gt;</code>: one per signing secret (two for 24 hours after a rotation), of{' '}
          <code>webhook-id.webhook-timestamp.body</code>
        </dd>
        <dt>
          <code>content-type</code>
        </dt>
        <dd>
          <code>application/json</code>
        </dd>
      </dl>
      <h3>Body</h3>
      {delivery.payload === undefined ? (
        <p class="hint">Not available.</p>
      ) : (
        <pre class="body request-body">{delivery.payload}</pre>
      )}
    </section>
  );
}

/** A response body as text; none or an empty one in words, never as an empty box. */
export function ResponseBody({ attempt }: { attempt: Attempt }) {
  if (attempt.status === null) return <span class="empty-body">No response</span>;
  if (attempt.body === null || attempt.body === '') return <span class="empty-body">Empty body</span>;
  return <pre class="body">{attempt.body}</pre>;
}
