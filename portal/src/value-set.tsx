// The endpoint's value set (what its filter's `"$in_set": true` looks up), shown only when its filter
// uses one: its size, its values 100 a page (searched by prefix among those loaded), and, unless the
// link is read-only, each value removable, and values added and removed by pasting a list (one a
// line, or separated by commas or spaces), sent 1,000 a call, the count shown after each call.
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import { call, type Webhook } from './api';
import { ErrorText, Notice, usePages } from './ui';

/** The most values one call may add or remove. */
const CHUNK = 1000;

const number = new Intl.NumberFormat('en-US');

/** "Value set: 1 value", "Value set: 12,000 values". */
export const sizeText = (count: number) => `Value set: ${number.format(count)} ${count === 1 ? 'value' : 'values'}`;

/** The pasted list's values: split at line breaks, commas and spaces; empty pieces dropped, each value once. */
export const valuesOf = (text: string) => [...new Set(text.split(/[\s,]+/).filter((v) => v !== ''))];

/** Whether the filter looks anything up in the value set (`$in_set` anywhere in it). */
export function usesValueSet(filter: unknown): boolean {
  if (typeof filter !== 'object' || filter === null) return false;
  return Object.entries(filter).some(([key, value]) => key === '$in_set' || usesValueSet(value));
}

/** The values a page shows at a time. */
const PAGE = '100';

interface ValuesPage {
  values: string[];
  count: number;
  next_cursor: string | null;
}

export function ValueSet({ webhook, readOnly }: { webhook: Webhook; readOnly: boolean }) {
  if (!usesValueSet(webhook.filter)) {
    return (
      <section aria-label="Value set" class="panel">
        <p class="one-line">
          No value set: add <code>$in_set</code> to the filter to use one.
        </p>
      </section>
    );
  }
  return <Values id={webhook.webhook_id} readOnly={readOnly} />;
}

function Values({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [count, setCount] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const [search, setSearch] = useState('');
  // Values removed one by one since the list was read.
  const [removed, setRemoved] = useState<ReadonlySet<string>>(new Set());
  const area = useRef<HTMLTextAreaElement>(null);
  const list = usePages(async (from) => {
    const page = await call<ValuesPage>('GET', 'webhook/values', {
      query: { webhook_id: id, limit: PAGE, cursor: from },
    });
    setCount(page.count);
    return { rows: page.values, next: page.next_cursor };
  });
  const reload = () => {
    setRemoved(new Set());
    return list.load(null);
  };

  useEffect(() => {
    reload();
  }, [id]);

  const removeOne = async (value: string) => {
    setError(null);
    setNotice('');
    try {
      const done = await call<{ count: number }>('POST', 'webhook/values', {
        body: { webhook_id: id, remove: [value] },
      });
      setCount(done.count);
      setRemoved((old) => new Set([...old, value]));
      setNotice(`Removed: ${value}`);
    } catch (err) {
      setError(err);
    }
  };

  const change = async (op: 'add' | 'remove') => {
    const values = valuesOf(area.current?.value ?? '');
    setError(null);
    setNotice('');
    if (values.length === 0) return setError(new Error('Values: paste at least one value.'));
    setBusy(true);
    let done = 0;
    try {
      for (; done < values.length; done += CHUNK) {
        const chunk = values.slice(done, done + CHUNK);
        const value = await call<{ count: number }>('POST', 'webhook/values', {
          body: { webhook_id: id, [op]: chunk },
        });
        setCount(value.count);
      }
      if (area.current) area.current.value = '';
      await reload();
      setNotice(
        `${op === 'add' ? 'Added' : 'Removed'}: ${number.format(values.length)} ${values.length === 1 ? 'value' : 'values'} sent.`,
      );
    } catch (err) {
      const sent = done === 0 ? '' : ` (the first ${number.format(done)} were sent)`;
      setError(new Error(`${err instanceof Error ? err.message : String(err)}${sent}`));
      if (done > 0) await reload();
    } finally {
      setBusy(false);
    }
  };

  const loaded = list.rows.filter((v) => !removed.has(v));
  const prefix = search.trim().toLowerCase();
  const shown = prefix === '' ? loaded : loaded.filter((v) => v.toLowerCase().startsWith(prefix));

  return (
    <section aria-labelledby="values-title" class="panel">
      <h2 id="values-title">Value set</h2>
      <p class="set-size">{count === null ? (error === null ? 'Loading the value set…' : '') : sizeText(count)}</p>
      <label class="search">
        Search values
        <input
          type="search"
          value={search}
          autocomplete="off"
          spellcheck={false}
          placeholder="The start of a value"
          onInput={(e: Event) => setSearch((e.target as HTMLInputElement).value)}
        />
      </label>
      <ul aria-label="The set's values" class="values">
        {shown.map((value) => (
          <li>
            <code>{value}</code>
            {readOnly ? null : (
              <button type="button" aria-label={`Remove ${value}`} onClick={() => removeOne(value)}>
                Remove
              </button>
            )}
          </li>
        ))}
      </ul>
      <p class="hint" role="status">
        {!list.loaded
          ? ''
          : prefix === ''
            ? loaded.length === 0
              ? 'The set is empty.'
              : `Showing ${number.format(loaded.length)} ${loaded.length === 1 ? 'value' : 'values'}${list.cursor === null ? '' : ', in order: Load more values for the next ones'}.`
            : `${number.format(shown.length)} of the ${number.format(loaded.length)} values loaded start with “${search.trim()}”${list.cursor === null ? '.' : ': Load more values to search further.'}`}
      </p>
      {list.cursor !== null ? (
        <button type="button" onClick={() => list.load(list.cursor)}>
          Load more values
        </button>
      ) : null}
      <ErrorText error={list.error} />
      {readOnly ? null : (
        <form class="values-form" onSubmit={(e: Event) => e.preventDefault()}>
          <label for="values-text">Values</label>
          <textarea
            id="values-text"
            ref={area}
            name="values"
            rows={4}
            spellcheck={false}
            autocomplete="off"
            aria-describedby="values-hint"
          />
          <p class="hint field-hint" id="values-hint">
            One a line, or separated by commas or spaces; at most 100,000 in the set, each 1 to 256 characters.
            Addresses match in any case.
          </p>
          <div class="actions">
            <button type="button" disabled={busy} onClick={() => change('add')}>
              Add values
            </button>
            <button type="button" disabled={busy} onClick={() => change('remove')}>
              Remove values
            </button>
          </div>
        </form>
      )}
      {notice ? <Notice text={notice} /> : null}
      <ErrorText error={error} />
    </section>
  );
}
