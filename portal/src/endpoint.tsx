// The endpoint's page: its URL and state (endpoint-facts), a failing endpoint's warning
// (endpoint-failing), the controls that change it (endpoint-actions, with its dialogs and forms;
// none on a read-only link), the edit form, what it is (endpoint-facts), its value set (value-set),
// its health and its deliveries (deliveries), both read again as the live connection (live.ts)
// tells. State, warning and controls come first: a narrow screen shows them without scrolling.
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type EventType, eventTypes, stringifyJson, type Webhook } from './api';
import { Deliveries } from './deliveries';
import { EndpointActions, useActions } from './endpoint-actions';
import { EndpointFacts, EndpointHead } from './endpoint-facts';
import { FailingBanner } from './endpoint-failing';
import { type EndpointFields, EndpointForm } from './endpoint-form';
import { EndpointTools } from './endpoint-tools';
import { Health, useStats } from './health';
import { useLive } from './live';
import { paths } from './router';
import { ErrorText, Heading, Link, Notice, useEvery } from './ui';
import { ValueSet } from './value-set';

export function EndpointPage({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [webhook, setWebhook] = useState<Webhook | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [editing, setEditing] = useState(false);
  const [catalog, setCatalog] = useState<EventType[]>([]);
  // Moves on when deliveries are on their way: the health and the deliveries are read again.
  const [version, setVersion] = useState(0);
  const { notice, setNotice, actionError, setActionError, act } = useActions();
  // New deliveries and attempts, as they happen (once the webhook is known to be the
  // application's): the health and the deliveries are read again.
  const live = useLive(webhook === null ? null : id, () => setVersion((v) => v + 1));
  // The webhook is read again every 5 seconds while the page is open (not while it is being
  // edited): a webhook the service disables meanwhile (410 Gone, failing) shows it, and why.
  const tick = useEvery(5000);
  const { stats, error: statsError } = useStats(id, version);

  useEffect(() => {
    call<Webhook>('GET', 'webhook', { query: { webhook_id: id } }).then(setWebhook, setError);
    eventTypes().then(setCatalog, () => setCatalog([]));
  }, [id]);
  useEffect(() => {
    if (tick === 0 || editing) return;
    call<Webhook>('GET', 'webhook', { query: { webhook_id: id } }).then(setWebhook, () => {});
  }, [tick]);

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

  const save = async ({ filter, ...fields }: EndpointFields) => {
    // The filter goes as typed (every digit kept), spliced into the JSON of the other fields.
    const rest = stringifyJson({ webhook_id: id, ...fields });
    const json = filter === undefined ? rest : `${rest.slice(0, -1)},"filter":${filter ?? 'null'}}`;
    const updated = await call<Webhook>('PATCH', 'webhook', { json });
    setWebhook(updated);
    setEditing(false);
    setNotice('Saved.');
  };

  return (
    <main>
      <p class="crumbs">
        <Link href={paths.endpoints}>All endpoints</Link>
      </p>
      <EndpointHead webhook={webhook} />
      <FailingBanner webhook={webhook} stats={stats} version={version} readOnly={readOnly} />

      {notice ? <Notice text={notice} /> : null}
      <ErrorText error={actionError} />

      {editing ? (
        <section aria-labelledby="edit-title" class="panel">
          <h2 id="edit-title">Edit endpoint</h2>
          <EndpointForm initial={webhook} submitLabel="Save" onSubmit={save} onCancel={() => setEditing(false)} />
        </section>
      ) : null}

      {readOnly ? null : (
        <EndpointActions
          webhook={webhook}
          act={act}
          changed={setWebhook}
          editing={editing}
          edit={() => setEditing(true)}
          failed={setActionError}
        />
      )}
      {readOnly ? null : (
        <EndpointTools webhook={webhook} catalog={catalog} act={act} sent={() => setVersion((v) => v + 1)} />
      )}

      <EndpointFacts webhook={webhook} />
      <ValueSet webhook={webhook} readOnly={readOnly} />
      <Health stats={stats} error={statsError} />
      <Deliveries id={id} version={version} catalog={catalog} live={live} />
    </main>
  );
}
