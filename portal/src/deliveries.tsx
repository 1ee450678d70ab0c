// The endpoint's deliveries: the table "Deliveries", newest first, with its Status and Event type
// filters and Load more; read again when the live connection (live.ts) says they changed and,
// while it is not live and a delivery of the first page is pending, every 2 seconds.
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type Delivery, type EventType } from './api';
import { LIVE_TEXT, type LiveState } from './live';
import { paths } from './router';
import { ErrorText, Link, Time, usePages } from './ui';

const STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;

/** The latest attempt's outcome: its HTTP status, or the kind of error. */
export const outcome = (status: number | null, error: string | null) =>
  status !== null ? `HTTP ${status}` : error !== null ? error : '—';

interface DeliveryPage {
  deliveries: Delivery[];
  next_cursor: string | null;
}

export function Deliveries({
  id,
  version,
  catalog,
  live,
}: {
  id: string;
  version: number;
  catalog: EventType[];
  live: LiveState;
}) {
  const [status, setStatus] = useState('');
  const [type, setType] = useState('');
  const [refresh, setRefresh] = useState(0);
  const { rows, cursor, error, loaded, load } = usePages(async (from) => {
    const page = await call<DeliveryPage>('GET', 'webhook/delivery', {
      query: { webhook_id: id, status, type, cursor: from },
    });
    return { rows: page.deliveries, next: page.next_cursor };
  });
  useEffect(() => {
    load(null);
  }, [id, status, type, version, refresh]);
  // While a delivery of the first page is pending and no live connection tells of its attempts,
  // the page looks again every 2 seconds.
  const pending = live !== 'live' && rows.some((r) => r.status === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => setRefresh((n) => n + 1), 2000);
    return () => clearTimeout(timer);
  }, [pending, rows]);

  const types = [...new Set([...catalog.map((t) => t.type), ...rows.map((r) => r.type)])].sort();

  return (
    <section aria-labelledby="deliveries-title" class="panel">
      <h2 id="deliveries-title">Deliveries</h2>
      <p class="hint" data-live={live}>
        {LIVE_TEXT[live]}
      </p>
      <div class="filters">
        <label>
          Status
          <select onChange={(e: Event) => setStatus((e.target as HTMLSelectElement).value)}>
            <option value="">All statuses</option>
            {STATUSES.map((s) => (
              <option value={s} selected={s === status}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Event type
          <select onChange={(e: Event) => setType((e.target as HTMLSelectElement).value)}>
            <option value="">All event types</option>
            {types.map((t) => (
              <option value={t} selected={t === type}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => setRefresh((n) => n + 1)}>
          Refresh
        </button>
      </div>
      <ErrorText error={error} />
      <div class="scroll">
        <table aria-label="Deliveries" class="stack">
          <thead>
            <tr>
              <th scope="col">Created</th>
              <th scope="col">Status</th>
              <th scope="col">Event type</th>
              <th scope="col">Event id</th>
              <th scope="col">Attempts</th>
              <th scope="col">Last result</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((d) => (
              <tr>
                <td data-label="Created">
                  <Link href={paths.delivery(id, d.delivery_id)}>
                    <Time iso={d.created_at} />
                  </Link>
                </td>
                <td data-label="Status">
                  <span class={`badge ${d.status}`}>{d.status}</span>
                </td>
                <td data-label="Event type">
                  <code>{d.type}</code>
                </td>
                <td data-label="Event id">
                  <Link href={paths.event(d.event_id)}>
                    <code>{d.event_id}</code>
                  </Link>
                </td>
                <td data-label="Attempts">{d.attempts}</td>
                <td data-label="Last result">{outcome(d.last_status, d.last_error)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {loaded && rows.length === 0 && error === null ? (
        <p>{type === '' ? 'No deliveries.' : 'No deliveries of this type.'}</p>
      ) : null}
      {cursor !== null ? (
        <button type="button" onClick={() => load(cursor)}>
          Load more
        </button>
      ) : null}
    </section>
  );
}
