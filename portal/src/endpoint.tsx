// The endpoint's page: what it is, the controls that change it (none on a read-only link), its
// health and its deliveries.
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type Delivery, type EventType, eventTypes, type Webhook } from './api';
import { type EndpointFields, EndpointForm } from './endpoint-form';
import { eventTypesText } from './endpoints';
import { Health } from './health';
import { navigate, paths } from './router';
import { Dialog, ErrorText, Heading, Link, Notice, Secret, Time, usePages } from './ui';

const STATUSES = ['pending', 'succeeded', 'failed', 'cancelled'] as const;

/** The latest attempt's outcome: its HTTP status, or the kind of error. */
export const outcome = (status: number | null, error: string | null) =>
  status !== null ? `HTTP ${status}` : error !== null ? error : '—';

/** A datetime-local value for `date` (the reader's time zone). */
const localInput = (date: Date) => {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
};

export function EndpointPage({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [webhook, setWebhook] = useState<Webhook | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [actionError, setActionError] = useState<unknown>(null);
  const [editing, setEditing] = useState(false);
  const [dialog, setDialog] = useState<'delete' | 'rotate' | null>(null);
  const [secret, setSecret] = useState<{ value: string; rotated: boolean } | null>(null);
  const [catalog, setCatalog] = useState<EventType[]>([]);
  const [version, setVersion] = useState(0);

  useEffect(() => {
    call<Webhook>('GET', 'webhook', { query: { webhook_id: id } }).then(setWebhook, setError);
    eventTypes().then(setCatalog, () => setCatalog([]));
  }, [id]);

  /** Runs a change; its outcome is announced. */
  const act = async (what: () => Promise<string>) => {
    setActionError(null);
    setNotice('');
    try {
      setNotice(await what());
    } catch (err) {
      setActionError(err);
    }
  };

  if (error) {
    return (
      <main>
        <Heading>Endpoint</Heading>
        <ErrorText error={error} />
        <p>
          <Link href={paths.endpoints}>All endpoints</Link>
        </p>
      </main>
    );
  }
  if (webhook === null) {
    return (
      <main>
        <p class="hint">Loading…</p>
      </main>
    );
  }

  const setEnabled = (enabled: boolean) =>
    act(async () => {
      await call('PUT', 'webhook', { body: { webhook_id: id, is_enabled: enabled } });
      setWebhook({ ...webhook, is_enabled: enabled });
      return enabled ? 'Enabled: the endpoint receives events again.' : 'Disabled: the endpoint receives no events.';
    });

  const save = async (fields: EndpointFields) => {
    const updated = await call<Webhook>('PATCH', 'webhook', { body: { webhook_id: id, ...fields } });
    setWebhook(updated);
    setEditing(false);
    setNotice('Saved.');
  };

  const testTypes = ['webhook.test', ...catalog.map((t) => t.type).filter((t) => t !== 'webhook.test')];

  return (
    <main>
      <p class="crumbs">
        <Link href={paths.endpoints}>All endpoints</Link>
      </p>
      <Heading>
        <span class="url">{webhook.url}</span>
      </Heading>
      <dl class="facts">
        <dt>Description</dt>
        <dd>{webhook.description ?? '—'}</dd>
        <dt>State</dt>
        <dd>
          <span class={webhook.is_enabled ? 'badge ok' : 'badge off'}>
            {webhook.is_enabled ? 'Enabled' : 'Disabled'}
          </span>
        </dd>
        <dt>Event types</dt>
        <dd>{eventTypesText(webhook.event_types)}</dd>
        <dt>Rate limit</dt>
        <dd>{webhook.rate_limit == null ? 'The service’s own' : `${webhook.rate_limit} a second`}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={webhook.created_at} />
        </dd>
        <dt>Endpoint id</dt>
        <dd>
          <code>{webhook.webhook_id}</code>
        </dd>
      </dl>

      {notice ? <Notice text={notice} /> : null}
      <ErrorText error={actionError} />

      {editing ? (
        <section aria-labelledby="edit-title" class="panel">
          <h2 id="edit-title">Edit endpoint</h2>
          <EndpointForm initial={webhook} submitLabel="Save" onSubmit={save} onCancel={() => setEditing(false)} />
        </section>
      ) : null}

      <section aria-label="Actions" class="panel actions-panel">
        <div class="actions">
          {readOnly ? null : (
            <>
              <button type="button" onClick={() => setEnabled(!webhook.is_enabled)}>
                {webhook.is_enabled ? 'Disable' : 'Enable'}
              </button>
              <button type="button" onClick={() => setEditing(true)} disabled={editing}>
                Edit
              </button>
              <button type="button" class="danger" onClick={() => setDialog('delete')}>
                Delete
              </button>
            </>
          )}
          <button
            type="button"
            aria-expanded={secret !== null && !secret.rotated}
            onClick={() =>
              secret !== null
                ? setSecret(null)
                : act(async () => {
                    const value = await call<{ secret: string }>('GET', 'webhook/secret', {
                      query: { webhook_id: id },
                    });
                    setSecret({ value: value.secret, rotated: false });
                    return '';
                  })
            }
          >
            {secret !== null ? 'Hide secret' : 'Show secret'}
          </button>
          {readOnly ? null : (
            <button type="button" onClick={() => setDialog('rotate')}>
              Rotate secret
            </button>
          )}
        </div>
        {secret !== null ? (
          <div class="secret-box">
            <p>{secret.rotated ? 'The new signing secret:' : 'The signing secret:'}</p>
            <Secret value={secret.value} />
            {secret.rotated ? (
              <p class="note">
                The previous secret keeps signing for 24 hours: until then every request carries both signatures, so
                your receiver can switch to the new secret without losing a delivery.
              </p>
            ) : null}
          </div>
        ) : null}

        {readOnly ? null : (
          <div class="tools">
            <form
              class="inline"
              onSubmit={(e: Event) => {
                e.preventDefault();
                const type = String(new FormData(e.target as HTMLFormElement).get('type'));
                act(async () => {
                  const sent = await call<{ event_id: string; delivery_id: string }>('POST', 'webhook/test', {
                    body: { webhook_id: id, type },
                  });
                  setVersion((v) => v + 1);
                  return `Test event sent: ${sent.event_id}.`;
                });
              }}
            >
              <label>
                Test event type
                <select name="type">
                  {testTypes.map((t) => (
                    <option value={t}>{t}</option>
                  ))}
                </select>
              </label>
              <button type="submit">Send test event</button>
            </form>
            <form
              class="inline"
              onSubmit={(e: Event) => {
                e.preventDefault();
                const since = String(new FormData(e.target as HTMLFormElement).get('since'));
                act(async () => {
                  const date = new Date(since);
                  if (Number.isNaN(date.getTime())) throw new Error('Since: choose a date and time.');
                  const done = await call<{ deliveries: number }>('POST', 'webhook/recover', {
                    body: { webhook_id: id, since: date.toISOString() },
                  });
                  setVersion((v) => v + 1);
                  return `Recovery started: ${done.deliveries} failed ${done.deliveries === 1 ? 'delivery' : 'deliveries'} will be attempted again.`;
                });
              }}
            >
              <fieldset>
                <legend>Recover</legend>
                <label>
                  Since
                  <input
                    type="datetime-local"
                    name="since"
                    required
                    value={localInput(new Date(Date.now() - 86_400_000))}
                  />
                </label>
                <button type="submit">Recover failed deliveries</button>
              </fieldset>
            </form>
          </div>
        )}
      </section>

      <Health id={id} version={version} />
      <Deliveries id={id} version={version} catalog={catalog} />

      <Dialog title="Delete this endpoint?" open={dialog === 'delete'} onClose={() => setDialog(null)}>
        <p>
          <span class="url">{webhook.url}</span> will receive no more events. Its deliveries so far are kept.
        </p>
        <div class="actions">
          <button type="button" data-initial onClick={() => setDialog(null)}>
            Cancel
          </button>
          <button
            type="button"
            class="danger"
            onClick={async () => {
              try {
                await call('DELETE', 'webhook', { query: { webhook_id: id } });
                setDialog(null);
                navigate(`${paths.endpoints}`);
              } catch (err) {
                setDialog(null);
                setActionError(err);
              }
            }}
          >
            Delete
          </button>
        </div>
      </Dialog>
      <Dialog title="Rotate the signing secret?" open={dialog === 'rotate'} onClose={() => setDialog(null)}>
        <p>
          A new secret signs every request from now on. The previous one keeps signing too, for 24 hours, so your
          receiver can switch without losing a delivery.
        </p>
        <div class="actions">
          <button type="button" data-initial onClick={() => setDialog(null)}>
            Cancel
          </button>
          <button
            type="button"
            class="primary"
            onClick={async () => {
              setDialog(null);
              await act(async () => {
                const value = await call<{ secret: string }>('POST', 'webhook/secret', { body: { webhook_id: id } });
                setSecret({ value: value.secret, rotated: true });
                return 'Secret rotated.';
              });
            }}
          >
            Rotate
          </button>
        </div>
      </Dialog>
    </main>
  );
}

interface DeliveryPage {
  deliveries: Delivery[];
  next_cursor: string | null;
}

function Deliveries({ id, version, catalog }: { id: string; version: number; catalog: EventType[] }) {
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
  // While a delivery of the first page is pending, the page looks again every 2 seconds.
  const pending = rows.some((r) => r.status === 'pending');
  useEffect(() => {
    if (!pending) return;
    const timer = setTimeout(() => setRefresh((n) => n + 1), 2000);
    return () => clearTimeout(timer);
  }, [pending, rows]);

  const types = [...new Set([...catalog.map((t) => t.type), ...rows.map((r) => r.type)])].sort();

  return (
    <section aria-labelledby="deliveries-title" class="panel">
      <h2 id="deliveries-title">Deliveries</h2>
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
        <table aria-label="Deliveries">
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
                <td>
                  <Link href={paths.delivery(id, d.delivery_id)}>
                    <Time iso={d.created_at} />
                  </Link>
                </td>
                <td>
                  <span class={`badge ${d.status}`}>{d.status}</span>
                </td>
                <td>
                  <code>{d.type}</code>
                </td>
                <td>
                  <code>{d.event_id}</code>
                </td>
                <td>{d.attempts}</td>
                <td>{outcome(d.last_status, d.last_error)}</td>
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
