// The endpoint's content filter and ordering: how they read on its page, their fields in the Edit
// form (Filter, JSON text; Ordering), and Try filter: the filter in the text area against an
// example event (the catalog's example of a type, editable), asked of the service (nothing is
// stored or sent); a miss says which condition failed when the service says so.
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import { ApiError, call, type EventType, type FilterTrial, type Webhook } from './api';
import { formatJsonText } from './json-text';
import { operatorText } from './receives';
import { ErrorText } from './ui';

/** The filter as formatted JSON text, every digit as stored; "None" without one. */
export const filterText = ({ filter, filter_text }: Webhook) =>
  filter == null ? 'None' : filter_text ? formatJsonText(filter_text) : JSON.stringify(filter, null, 2);

/** The ordering as the page says it. */
export const orderingText = (ordering: Webhook['ordering']) => (ordering === 'fifo' ? 'FIFO' : 'Unordered');

/** A filter the page refuses before asking the service (its text is no JSON object). */
export class FilterTextError extends Error {}

/** Whether `error` is about the filter: the page's own check, or the service naming `filter`. */
export const isFilterError = (error: unknown) =>
  error instanceof FilterTextError || (error instanceof ApiError && /^filter\b/.test(error.reason));

/**
 * The Filter text area's filter as JSON text to send as it is (every digit as typed): null when
 * the text is empty or `null`; a FilterTextError when it is not a JSON object.
 */
export function filterJson(text: string): string | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  let value: unknown;
  try {
    value = JSON.parse(trimmed);
  } catch {
    throw new FilterTextError('Filter: this is not valid JSON. Write a JSON object, or leave it empty for none.');
  }
  if (value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw new FilterTextError('Filter: write a JSON object, or leave it empty for none.');
  }
  return trimmed;
}

/** The text the Filter text area starts with: the stored filter, formatted; empty without one. */
export const initialFilterText = (webhook: Webhook) => (webhook.filter == null ? '' : filterText(webhook));

/** The example event of a type of the catalog, laid out: what Try filter starts from. */
const exampleOf = (type: EventType | undefined) =>
  type === undefined ? '' : JSON.stringify({ type: type.type, data: type.example }, null, 2);

/**
 * The Example event text area's event as JSON text to send as it is (every digit as typed); an
 * Error saying what is wrong when it is no `{"type", "data"}` object.
 */
export function exampleJson(text: string): string {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new Error('Example event: this is not valid JSON.');
  }
  const event = value as { type?: unknown; data?: unknown } | null;
  if (typeof event !== 'object' || event === null || Array.isArray(event) || typeof event.type !== 'string') {
    throw new Error('Example event: write a JSON object with "type" (a string) and "data" (an object).');
  }
  if (typeof event.data !== 'object' || event.data === null || Array.isArray(event.data)) {
    throw new Error('Example event: "data" must be a JSON object.');
  }
  return text.trim();
}

/** Why a trial missed, in words: "data.price ≥ 100 does not hold: data.price is 50". */
export function whyText(why: NonNullable<FilterTrial['why']>): string {
  const condition = operatorText(why.path, why.operator, why.expected);
  const found = 'found' in why ? `${why.path} is ${JSON.stringify(why.found)}` : `${why.path} is missing`;
  return `${condition} does not hold: ${found}.`;
}

/** The edit form's Filter, Try filter and Ordering. `error` is the form's failure when it is the filter's. */
export function FilterFields({ webhook, catalog, error }: { webhook: Webhook; catalog: EventType[]; error: unknown }) {
  const area = useRef<HTMLTextAreaElement>(null);
  const choice = useRef<HTMLSelectElement>(null);
  const example = useRef<HTMLTextAreaElement>(null);
  const [outcome, setOutcome] = useState<FilterTrial | { error: unknown } | null>(null);
  const [busy, setBusy] = useState(false);
  const withExample = catalog.filter((t) => t.example !== undefined);
  const first = withExample[0]?.type;
  // The example of the chosen type fills the Example event, once the catalog is known, and whenever
  // another type is chosen (what was typed there is replaced).
  const fill = () => {
    if (example.current) example.current.value = exampleOf(withExample.find((t) => t.type === choice.current?.value));
  };
  useEffect(fill, [first]);

  const tryFilter = async () => {
    setOutcome(null);
    setBusy(true);
    try {
      const json = filterJson(area.current?.value ?? '');
      const event = exampleJson(example.current?.value ?? '');
      const value = await call<FilterTrial>('POST', 'webhook/filter/test', {
        json: `{"webhook_id":${webhook.webhook_id},"filter":${json ?? 'null'},"event":${event}}`,
      });
      setOutcome({ matches: value.matches === true, why: value.why });
    } catch (err) {
      setOutcome({ error: err });
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      {/* The label is not around the text area: its text would become part of the label's name. */}
      <label for="filter-text">Filter</label>
      <textarea
        id="filter-text"
        ref={area}
        name="filter"
        rows={6}
        spellcheck={false}
        autocomplete="off"
        aria-describedby="filter-hint"
        aria-invalid={isFilterError(error) ? 'true' : undefined}
        placeholder='{"data.contract": "0x…"}'
        value={initialFilterText(webhook)}
      />
      <p class="hint field-hint" id="filter-hint">
        A JSON object matched against each event's <code>type</code> and <code>data</code>; empty: every event of the
        chosen types. See the filter grammar in the service's documentation.
      </p>
      {isFilterError(error) ? <ErrorText error={error} /> : null}
      <fieldset class="try">
        <legend>Try the filter</legend>
        <div class="field">
          <label for="try-type">Example event type</label>
          <select id="try-type" ref={choice} name="try_type" onChange={fill}>
            {withExample.map((t) => (
              <option value={t.type}>{t.type}</option>
            ))}
          </select>
        </div>
        <label for="try-event">Example event</label>
        <textarea
          id="try-event"
          ref={example}
          name="try_event"
          rows={8}
          spellcheck={false}
          autocomplete="off"
          aria-describedby="try-event-hint"
        />
        <p class="hint field-hint" id="try-event-hint">
          The catalog's example of the chosen type, as the filter sees it (<code>type</code> and <code>data</code>):
          change it to try other values.
        </p>
        <button type="button" onClick={tryFilter} disabled={busy}>
          Try filter
        </button>
        <p role="status" class="try-outcome">
          {outcome === null || 'error' in outcome ? '' : outcome.matches ? 'Matches' : 'Does not match'}
        </p>
        {outcome !== null && !('error' in outcome) && !outcome.matches && outcome.why ? (
          <p class="try-why">{whyText(outcome.why)}</p>
        ) : null}
        {outcome !== null && 'error' in outcome ? <ErrorText error={outcome.error} /> : null}
      </fieldset>
      <label for="ordering">Ordering</label>
      <select id="ordering" name="ordering">
        <option value="" selected={webhook.ordering !== 'fifo'}>
          Unordered
        </option>
        <option value="fifo" selected={webhook.ordering === 'fifo'}>
          FIFO
        </option>
      </select>
      <p class="hint field-hint">
        FIFO: one delivery at a time, in the order the events were stored; a failing delivery holds the ones behind it.
      </p>
    </>
  );
}
