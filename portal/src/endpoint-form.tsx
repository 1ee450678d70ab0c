// The form that adds an endpoint (Create) or edits one (Save): URL, description, event types
// (one checkbox per type of the catalog; none ticked: every type) and rate limit; editing, also the
// filter and ordering (endpoint-filter), each sent only when changed.
import { useEffect, useState } from 'hono/jsx/dom';
import { type EventType, eventTypes, type Webhook } from './api';
import { TEST_TYPE } from './catalog';
import {
  DestinationFields,
  type DestinationType,
  destinationFromForm,
  headersFromForm,
  headersText,
} from './endpoint-destination';
import { FilterFields, filterJson, initialFilterText, isFilterError } from './endpoint-filter';
import { ErrorText } from './ui';

export interface EndpointFields {
  /** Absent for a destination that is not HTTP. */
  url?: string;
  /** Absent: HTTP, unchanged. */
  destination?: Record<string, unknown>;
  /** Absent: unchanged. */
  headers?: Record<string, string> | null;
  sensitive_headers?: string[];
  description: string | null;
  event_types: string[] | null;
  rate_limit: number | null;
  /** The filter as JSON text to send as typed (null: none); absent: unchanged. */
  filter?: string | null;
  /** Absent: unchanged. */
  ordering?: 'fifo' | null;
}

export function EndpointForm({
  initial,
  submitLabel,
  onSubmit,
  onCancel,
}: {
  initial?: Webhook;
  submitLabel: 'Create' | 'Save';
  onSubmit: (fields: EndpointFields) => Promise<void>;
  onCancel?: () => void;
}) {
  const [catalog, setCatalog] = useState<EventType[] | null>(null);
  const [catalogError, setCatalogError] = useState<unknown>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [type, setType] = useState<DestinationType>(
    (initial?.destination?.type as DestinationType | undefined) ?? 'http',
  );
  useEffect(() => {
    eventTypes().then(setCatalog, setCatalogError);
  }, []);
  // Types the endpoint has but the catalog does not list stay choosable; the test event's type is
  // not one to subscribe to (Send test event sends it whatever the endpoint's types).
  const types = (catalog ?? []).map((t) => t.type).filter((t) => t !== TEST_TYPE);
  for (const t of initial?.event_types ?? []) if (!types.includes(t)) types.push(t);
  const ticked = new Set(initial?.event_types ?? []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const form = new FormData(e.target as HTMLFormElement);
    const chosen = form.getAll('event_types').map(String);
    const rate = String(form.get('rate_limit') ?? '').trim();
    const description = String(form.get('description') ?? '').trim();
    setBusy(true);
    setError(null);
    try {
      const fields: EndpointFields = {
        description: description === '' ? null : description,
        event_types: chosen.length === 0 ? null : chosen,
        rate_limit: rate === '' ? null : Number(rate),
      };
      const destination = destinationFromForm(form);
      if (type === 'http') fields.url = String(form.get('url') ?? '').trim();
      // HTTP is the default: sent only when it changes the type back.
      if (type !== 'http' || (initial?.destination?.type ?? 'http') !== 'http') fields.destination = destination;
      // Headers typed as they were shown (sensitive ones masked) are left as they are.
      if (type === 'http' && String(form.get('headers') ?? '') !== headersText(initial)) {
        const { headers, sensitive } = headersFromForm(form);
        fields.headers = Object.keys(headers).length === 0 ? null : headers;
        if (sensitive.length > 0) fields.sensitive_headers = sensitive;
      }
      if (initial !== undefined) {
        const filter = String(form.get('filter') ?? '');
        if (filter.trim() !== initialFilterText(initial).trim()) fields.filter = filterJson(filter);
        const ordering = form.get('ordering') === 'fifo' ? 'fifo' : null;
        if (ordering !== (initial.ordering ?? null)) fields.ordering = ordering;
      }
      await onSubmit(fields);
    } catch (err) {
      setError(err instanceof Error ? err : new Error(String(err)));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="endpoint-form" onSubmit={submit}>
      <DestinationFields initial={initial} onType={setType} />
      {type === 'http' ? (
        <>
          <label>
            Endpoint URL
            <input
              name="url"
              type="url"
              required
              maxLength={2048}
              placeholder="https://example.com/webhooks"
              value={(initial?.destination?.type ?? 'http') === 'http' ? (initial?.url ?? '') : ''}
              autocomplete="off"
            />
          </label>
          <label>
            Custom headers
            <textarea name="headers" rows={2} placeholder="Authorization: Bearer …">
              {headersText(initial)}
            </textarea>
            <span class="hint">
              One <code>Name: value</code> a line, at most 20, sent with every request (not the signature headers).
            </span>
          </label>
          <label>
            Sensitive headers
            <input name="sensitive_headers" type="text" autocomplete="off" placeholder="Authorization" />
            <span class="hint">Their names, comma-separated: stored sealed and shown as ••••.</span>
          </label>
        </>
      ) : null}
      <label>
        Description
        <input name="description" type="text" maxLength={256} value={initial?.description ?? ''} autocomplete="off" />
      </label>
      <fieldset>
        <legend>Event types</legend>
        <p class="hint">None ticked: the endpoint receives every type.</p>
        {catalogError !== null ? (
          <ErrorText
            error={`The event types could not be loaded (${catalogError instanceof Error ? catalogError.message : String(catalogError)}).`}
          />
        ) : null}
        {catalog === null && catalogError === null ? <p class="hint">Loading the event types…</p> : null}
        <div class="checks">
          {types.map((t) => (
            <label class="check">
              <input type="checkbox" name="event_types" value={t} checked={ticked.has(t)} /> <code>{t}</code>
            </label>
          ))}
        </div>
      </fieldset>
      <label>
        Rate limit
        <input name="rate_limit" type="number" min={1} max={1000} step={1} value={initial?.rate_limit ?? ''} />
        <span class="hint">Deliveries per second at most (1 to 1,000); empty: the service's own limit.</span>
      </label>
      {initial !== undefined ? <FilterFields webhook={initial} catalog={catalog ?? []} error={error} /> : null}
      {isFilterError(error) ? null : <ErrorText error={error} />}
      <div class="actions">
        <button type="submit" class="primary" disabled={busy}>
          {submitLabel}
        </button>
        {onCancel ? (
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}
