// The page "Event types": each type of the catalog with its description and an example payload.
import { useEffect, useState } from 'hono/jsx/dom';
import { type EventType, eventTypes } from './api';
import { ErrorText, Heading } from './ui';

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
      <p>The events your endpoints can receive, each with an example of its payload.</p>
      <ErrorText error={error} />
      {(types ?? []).map((t) => (
        <section class="panel event-type" id={t.type} aria-labelledby={`type-${t.type}`}>
          <h2 id={`type-${t.type}`}>
            <code>{t.type}</code>
          </h2>
          <p>{t.description}</p>
          <h3>Example payload</h3>
          <pre class="body">{JSON.stringify(t.example, null, 2)}</pre>
        </section>
      ))}
    </main>
  );
}
