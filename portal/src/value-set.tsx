// The endpoint's value set (what its filter's `"$in_set": true` looks up): its size, and, unless
// the link is read-only, values added and removed by pasting a list (one a line, or separated by
// commas or spaces), sent 1,000 a call, the count shown after each call.
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import { call } from './api';
import { ErrorText, Notice } from './ui';

/** The most values one call may add or remove. */
const CHUNK = 1000;

const number = new Intl.NumberFormat('en-US');

/** "Value set: 1 value", "Value set: 12,000 values". */
export const sizeText = (count: number) => `Value set: ${number.format(count)} ${count === 1 ? 'value' : 'values'}`;

/** The pasted list's values: split at line breaks, commas and spaces; empty pieces dropped, each value once. */
export const valuesOf = (text: string) => [...new Set(text.split(/[\s,]+/).filter((v) => v !== ''))];

export function ValueSet({ id, readOnly }: { id: string; readOnly: boolean }) {
  const [count, setCount] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [notice, setNotice] = useState('');
  const [busy, setBusy] = useState(false);
  const area = useRef<HTMLTextAreaElement>(null);

  useEffect(() => {
    call<{ count: number }>('GET', 'webhook/values', { query: { webhook_id: id, limit: '1' } }).then(
      (v) => setCount(v.count),
      setError,
    );
  }, [id]);

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
      setNotice(
        `${op === 'add' ? 'Added' : 'Removed'}: ${number.format(values.length)} ${values.length === 1 ? 'value' : 'values'} sent.`,
      );
    } catch (err) {
      const sent = done === 0 ? '' : ` (the first ${number.format(done)} were sent)`;
      setError(new Error(`${err instanceof Error ? err.message : String(err)}${sent}`));
    } finally {
      setBusy(false);
    }
  };

  return (
    <section aria-labelledby="values-title" class="panel">
      <h2 id="values-title">Value set</h2>
      <p class="set-size">{count === null ? (error === null ? 'Loading the value set…' : '') : sizeText(count)}</p>
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
