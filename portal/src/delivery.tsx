// One delivery: its state, the request that was sent (delivery-request), the table "Attempts"
// (each response body as text), copying its event id (and a link to the event's screen), and
// Resend. Opened from its endpoint's deliveries, or by its id alone from the header's search (the
// reply does not name its endpoint: the page then has no link to it).
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type Delivery } from './api';
import { outcome } from './deliveries';
import { ResponseBody, SentRequest } from './delivery-request';
import { enableFirst } from './endpoint-tools';
import { isNotFound } from './event';
import { paths } from './router';
import { CopyButton, ErrorText, Heading, Link, Notice, Time } from './ui';

export function DeliveryPage({ id, delivery, readOnly }: { id: string | null; delivery: string; readOnly: boolean }) {
  const [value, setValue] = useState<Delivery | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState<{ text: string; delivery: string } | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    call<Delivery>('GET', 'webhook/delivery', { query: { delivery_id: delivery } }).then((d) => {
      setValue(d);
      setError(null);
    }, setError);
  }, [delivery, refresh]);
  // While it is pending, the page looks again every 2 seconds.
  useEffect(() => {
    if (value?.status !== 'pending') return;
    const timer = setTimeout(() => setRefresh((n) => n + 1), 2000);
    return () => clearTimeout(timer);
  }, [value]);

  const resend = async () => {
    setActionError(null);
    setNotice(null);
    try {
      const sent = await enableFirst('resend', () =>
        call<{ delivery_id: string }>('POST', 'webhook/delivery/resend', { body: { delivery_id: delivery } }),
      );
      setNotice({ text: 'Resent as a new delivery.', delivery: sent.delivery_id });
    } catch (err) {
      setActionError(err);
    }
  };

  return (
    <main>
      <p class="crumbs">
        <Link href={paths.endpoints}>All endpoints</Link>
        {id === null ? null : (
          <>
            {' › '}
            <Link href={paths.endpoint(id)}>Endpoint</Link>
          </>
        )}
      </p>
      <Heading>Delivery</Heading>
      {isNotFound(error) ? (
        <p role="alert" class="error">
          Not found: this application has no delivery <code>{delivery}</code>.
        </p>
      ) : (
        <ErrorText error={error} />
      )}
      {value ? (
        <>
          <dl class="facts">
            <dt>Status</dt>
            <dd>
              <span class={`badge ${value.status}`}>{value.status}</span>
            </dd>
            <dt>Event type</dt>
            <dd>
              <Link href={`${paths.eventTypes}#${encodeURIComponent(value.type)}`}>
                <code>{value.type}</code>
              </Link>
            </dd>
            <dt>Event id</dt>
            <dd>
              <Link href={paths.event(value.event_id)}>
                <code>{value.event_id}</code>
              </Link>{' '}
              <CopyButton text={value.event_id} label="Copy event id" />
            </dd>
            <dt>Attempts</dt>
            <dd>{value.attempts}</dd>
            <dt>Created</dt>
            <dd>
              <Time iso={value.created_at} />
            </dd>
            <dt>Next attempt</dt>
            <dd>
              <Time iso={value.next_attempt_at} />
            </dd>
          </dl>
          {readOnly ? null : (
            <div class="actions">
              <button type="button" onClick={resend}>
                Resend
              </button>
            </div>
          )}
          {notice ? (
            <p role="status" class="notice">
              {notice.text} <Link href={paths.delivery(id, notice.delivery)}>Open the new delivery</Link>
            </p>
          ) : null}
          <ErrorText error={actionError} />
          <SentRequest delivery={value} />
          <h2>Attempts</h2>
          <div class="scroll">
            <table aria-label="Attempts" class="stack">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Time</th>
                  <th scope="col">Result</th>
                  <th scope="col">Duration</th>
                  <th scope="col">Response body</th>
                </tr>
              </thead>
              <tbody>
                {(value.attempt_log ?? []).map((a) => (
                  <tr>
                    <td data-label="#">{a.attempt}</td>
                    <td data-label="Time">
                      <Time iso={a.attempted_at} />
                    </td>
                    <td data-label="Result">{outcome(a.status, a.error)}</td>
                    <td data-label="Duration">{`${a.duration_ms} ms`}</td>
                    <td data-label="Response body">
                      <ResponseBody attempt={a} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          {(value.attempt_log ?? []).length === 0 ? <p>No attempt yet.</p> : null}
          {value.status === 'pending' ? <Notice text="Pending: this page looks again every 2 seconds." /> : null}
        </>
      ) : error === null ? (
        <p class="hint">Loading…</p>
      ) : null}
    </main>
  );
}
