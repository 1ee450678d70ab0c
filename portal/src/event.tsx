// The screen "Event" (from the header's search): one event of the application, its type, time and
// data, and the table "Deliveries" of what it made, each to its endpoint (a link to the endpoint's
// page, named by its URL when the application still has it) and to the delivery's page.
import { useEffect, useState } from 'hono/jsx/dom';
import { ApiError, call, type EventJourney, type Webhook } from './api';
import { outcome } from './deliveries';
import { formatJsonText } from './json-text';
import { paths } from './router';
import { CopyButton, ErrorText, Heading, Link, Time } from './ui';

/** The application's endpoints' URLs by id (the first 100: an application has at most WEBHOOKS_PER_APP). */
async function endpointUrls(): Promise<Map<string, string>> {
  const page = await call<{ webhooks: Webhook[] }>('GET', 'webhook', { query: { limit: '100' } });
  return new Map(page.webhooks.map((w) => [w.webhook_id, w.url]));
}

export const isNotFound = (error: unknown) => error instanceof ApiError && error.status === 404;

export function EventPage({ event }: { event: string }) {
  const [value, setValue] = useState<EventJourney | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [urls, setUrls] = useState<Map<string, string>>(new Map());
  useEffect(() => {
    setValue(null);
    setError(null);
    call<EventJourney>('GET', 'event', { query: { event_id: event } }).then(setValue, setError);
    endpointUrls().then(setUrls, () => {});
  }, [event]);

  return (
    <main>
      <p class="crumbs">
        <Link href={paths.endpoints}>All endpoints</Link>
      </p>
      <Heading>Event</Heading>
      {isNotFound(error) ? (
        <p role="alert" class="error">
          Not found: this application has no event <code>{event}</code>.
        </p>
      ) : (
        <ErrorText error={error} />
      )}
      {value ? (
        <>
          <dl class="facts">
            <dt>Event id</dt>
            <dd>
              <code>{value.event_id}</code> <CopyButton text={value.event_id} label="Copy event id" />
            </dd>
            <dt>Type</dt>
            <dd>
              <Link href={`${paths.eventTypes}#${encodeURIComponent(value.type)}`}>
                <code>{value.type}</code>
              </Link>
            </dd>
            <dt>Created</dt>
            <dd>
              <Time iso={value.created_at} />
            </dd>
            <dt>Data</dt>
            <dd>
              <pre class="body">
                {value.data_text ? formatJsonText(value.data_text) : JSON.stringify(value.data, null, 2)}
              </pre>
            </dd>
          </dl>
          <h2>Deliveries</h2>
          <div class="scroll">
            <table aria-label="Deliveries" class="stack">
              <thead>
                <tr>
                  <th scope="col">Endpoint</th>
                  <th scope="col">Delivery</th>
                  <th scope="col">Status</th>
                  <th scope="col">Attempts</th>
                  <th scope="col">Last result</th>
                </tr>
              </thead>
              <tbody>
                {value.deliveries.map((d) => (
                  <tr>
                    <td class="url" data-label="Endpoint">
                      <Link href={paths.endpoint(d.webhook_id)}>
                        {urls.get(d.webhook_id) ?? `Endpoint ${d.webhook_id}`}
                      </Link>
                    </td>
                    <td data-label="Delivery">
                      <Link href={paths.delivery(d.webhook_id, d.delivery_id)}>{d.delivery_id}</Link>
                    </td>
                    <td data-label="Status">
                      <span class={`badge ${d.status}`}>{d.status}</span>
                    </td>
                    <td data-label="Attempts">{d.attempts}</td>
                    <td data-label="Last result">{outcome(d.last_status, d.last_error)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {value.deliveries.length === 0 ? <p>No deliveries: no endpoint was to receive it.</p> : null}
        </>
      ) : error === null ? (
        <p class="hint">Loading…</p>
      ) : null}
    </main>
  );
}
