// The page "Event types": each type of the catalog with its description and an example of the
// whole body an endpoint receives (`type`, `timestamp`, and the example as `data`: the body every
// delivery sends, src/events/event.ts). The test event's type is sent by Send test event only.
import { useEffect, useState } from 'hono/jsx/dom';
import { type EventType, eventTypes } from './api';
import { ErrorText, Heading } from './ui';

/** The type of test events: sent to one endpoint by Send test event, not subscribed to. */
export const TEST_TYPE = 'webhook.test';

/** The body an endpoint receives for an event of type `type` with this `data`, laid out. */
export const bodyOf = (type: string, data: unknown) =>
  JSON.stringify({ type, timestamp: '2026-11-22T12:05:32.043Z', data }, null, 2);

export function EventTypesPage() {
  const [types, setTypes] = useState<EventType[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    eventTypes().then(setTypes, setError);
  }, []);
  useEffect(() => {
    // A link to one type (#NEW_NFT) scrolls to it once the catalog is shown.
    const id = decodeURIComponent(location.hash.slice(1));
    if (types !== null && id !== '') document.getElementById(id)?.scrollIntoView();
  }, [types]);
  return (
    <main>
      <Heading>Event types</Heading>
      <p>
        The events your endpoints can receive, each with an example of the body it arrives with: a POST whose JSON body
        has the event's <code>type</code>, its <code>timestamp</code> (when it happened) and its <code>data</code>, with
        the headers <code>webhook-id</code> (the event id: the same for every attempt, to deduplicate on),{' '}
        <code>webhook-timestamp</code> and <code>webhook-signature</code> (Standard Webhooks).
      </p>
      <ErrorText error={error} />
      {(types ?? []).map((t) => (
        <section class="panel event-type" id={t.type} aria-labelledby={`type-${t.type}`}>
          <h2 id={`type-${t.type}`}>
            <code>{t.type}</code>
          </h2>
          <p>{t.description}</p>
          {t.type === TEST_TYPE ? (
            <p class="hint">
              Sent only by Send test event, to the one endpoint it is sent from, whatever its event types: not a type to
              subscribe to.
            </p>
          ) : null}
          <h3>Example body</h3>
          <pre class="body">{bodyOf(t.type, t.example)}</pre>
        </section>
      ))}
    </main>
  );
}
