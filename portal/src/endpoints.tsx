// The endpoints page: the table "Endpoints" (Load more for later pages) and "Add endpoint". Each
// row says what the endpoint receives in words (receives.ts); the Description column shows only
// when an endpoint has one.
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type Webhook } from './api';
import { destinationLabel } from './endpoint-destination';
import { type EndpointFields, EndpointForm } from './endpoint-form';
import { EndpointState } from './endpoint-state';
import { receivesText } from './receives';
import { paths } from './router';
import { ErrorText, Heading, Link, Notice, Secret, Time, Url, usePages } from './ui';

interface Page {
  webhooks: Webhook[];
  next_cursor: string | null;
}

export function EndpointsPage({ readOnly, notice }: { readOnly: boolean; notice: string }) {
  const { rows, cursor, error, loaded, load } = usePages(async (from) => {
    const page = await call<Page>('GET', 'webhook', { query: { limit: '20', cursor: from } });
    return { rows: page.webhooks, next: page.next_cursor };
  });
  const [adding, setAdding] = useState(false);
  const [created, setCreated] = useState<Webhook | null>(null);

  useEffect(() => {
    load(null);
  }, []);
  // An empty column takes no room: Description only when an endpoint shown has one.
  const described = rows.some((w) => Boolean(w.description));

  const create = async (fields: EndpointFields) => {
    const body: Record<string, unknown> = {};
    if (fields.url !== undefined) body.url = fields.url;
    if (fields.destination !== undefined) body.destination = fields.destination;
    if (fields.headers != null) body.headers = fields.headers;
    if (fields.sensitive_headers !== undefined) body.sensitive_headers = fields.sensitive_headers;
    if (fields.description !== null) body.description = fields.description;
    if (fields.event_types !== null) body.event_types = fields.event_types;
    if (fields.rate_limit !== null) body.rate_limit = fields.rate_limit;
    const webhook = await call<Webhook>('POST', 'webhook', { body });
    setCreated(webhook);
    setAdding(false);
    await load(null);
  };

  return (
    <main>
      <Heading>Endpoints</Heading>
      {notice ? <Notice text={notice} /> : null}
      {readOnly ? null : (
        <section aria-label="Add endpoint" class="panel">
          {adding ? (
            <>
              <h2>Add endpoint</h2>
              <EndpointForm submitLabel="Create" onSubmit={create} onCancel={() => setAdding(false)} />
            </>
          ) : (
            <button
              type="button"
              class="primary"
              onClick={() => {
                setCreated(null);
                setAdding(true);
              }}
            >
              Add endpoint
            </button>
          )}
          {created ? (
            <div class="created" role="status">
              <p>
                Endpoint created: <Link href={paths.endpoint(created.webhook_id)}>{created.url}</Link>
              </p>
              <p>Its signing secret, shown this once (Show secret on the endpoint's page reads it again):</p>
              <Secret value={created.secret ?? ''} />
            </div>
          ) : null}
        </section>
      )}
      <ErrorText error={error} />
      <div class="scroll">
        <table aria-label="Endpoints" class="stack">
          <thead>
            <tr>
              <th scope="col">URL</th>
              {described ? <th scope="col">Description</th> : null}
              <th scope="col">State</th>
              <th scope="col">Receives</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {rows.map((w) => (
              <tr>
                <td class="url" data-label="URL">
                  <Link href={paths.endpoint(w.webhook_id)}>
                    <Url url={w.url} />
                  </Link>
                  {(w.destination?.type ?? 'http') === 'http' ? null : (
                    <span class="hint"> ({destinationLabel(w)})</span>
                  )}
                </td>
                {described ? <td data-label="Description">{w.description ?? ''}</td> : null}
                <td data-label="State">
                  <EndpointState webhook={w} />
                </td>
                <td data-label="Receives">{receivesText(w)}</td>
                <td data-label="Created">
                  <Time iso={w.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {loaded && rows.length === 0 && error === null ? <p>No endpoints yet.</p> : null}
      {cursor !== null ? (
        <button type="button" onClick={() => load(cursor)}>
          Load more
        </button>
      ) : null}
    </main>
  );
}
