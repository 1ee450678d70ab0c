// Small pieces shared by the portal's pages: links that route, dialogs, copying, times, messages.
// Every text from the API is a JSX child or attribute here: the DOM gets it as text, never as HTML.
import type { Child } from 'hono/jsx';
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import { navigate, navigated } from './router';

/** A link within the portal: the address changes without loading the page again. */
export function Link({ href, children, class: className }: { href: string; children?: Child; class?: string }) {
  return (
    <a
      href={href}
      class={className}
      onClick={(e: MouseEvent) => {
        if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(href);
      }}
    >
      {children}
    </a>
  );
}

/**
 * A URL that wraps after its `/` and `.` (a line break may come there; `<wbr>` adds no character,
 * so the text, its copy and its accessible name stay the URL).
 */
export function Url({ url }: { url: string }) {
  const pieces = url.split(/(?<=[/.])/);
  return <>{pieces.map((piece, i) => (i === pieces.length - 1 ? piece : [piece, <wbr />]))}</>;
}

/** The page's heading: focused when the page opens, so a screen reader announces the new page. */
export function Heading({ children }: { children?: Child }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (navigated) ref.current?.focus();
  }, []);
  return (
    <h1 ref={ref} tabIndex={-1}>
      {children}
    </h1>
  );
}

/**
 * A modal <dialog>: focus moves into it when it opens (to its first button unless `initial` is
 * given) and back to what had it when it closes; Escape closes it.
 */
export function Dialog({
  title,
  open,
  onClose,
  children,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children?: Child;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const opener = useRef<Element | null>(null);
  const id = `dialog-${title.replace(/\W+/g, '-').toLowerCase()}`;
  useEffect(() => {
    const dialog = ref.current;
    if (dialog === null) return;
    if (open && !dialog.open) {
      opener.current = document.activeElement;
      dialog.showModal();
      dialog.querySelector<HTMLElement>('[data-initial]')?.focus();
    } else if (!open && dialog.open) {
      dialog.close();
    }
    if (!open && opener.current instanceof HTMLElement) {
      opener.current.focus();
      opener.current = null;
    }
  }, [open]);
  return (
    <dialog
      ref={ref}
      aria-labelledby={id}
      // Escape: the page closes it (the close event comes a task later, maybe after it opened again).
      onCancel={(e: Event) => {
        e.preventDefault();
        onClose();
      }}
    >
      <h2 id={id}>{title}</h2>
      {children}
    </dialog>
  );
}

/** A Copy button for `text`; says "Copied" for a moment. */
export function CopyButton({ text, label = 'Copy' }: { text: string; label?: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  return (
    <span class="copy">
      <button
        type="button"
        onClick={async () => {
          try {
            await navigator.clipboard.writeText(text);
            setState('copied');
          } catch {
            setState('failed');
          }
          setTimeout(() => setState('idle'), 2000);
        }}
      >
        {label}
      </button>
      <span role="status" class="copy-state">
        {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text and copy it' : ''}
      </span>
    </span>
  );
}

/** A secret, shown as text that is easy to select, with its Copy button. */
export function Secret({ value }: { value: string }) {
  return (
    <p class="secret">
      <code data-secret>{value}</code> <CopyButton text={value} />
    </p>
  );
}

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
/** An ISO 8601 time from the API, in the reader's time zone, with the exact value in `datetime`. */
export function Time({ iso }: { iso: string | null }) {
  if (iso === null) return <span>—</span>;
  const date = new Date(iso);
  return <time dateTime={iso}>{Number.isNaN(date.getTime()) ? iso : dateTime.format(date)}</time>;
}

/** A failure, as text: role alert so it is announced. */
export function ErrorText({ error }: { error: unknown }) {
  if (error === null || error === undefined) return null;
  return (
    <p role="alert" class="error">
      {error instanceof Error ? error.message : String(error)}
    </p>
  );
}

/** A live region for the outcome of an action ("Disabled.", "Test event sent: ..."). */
export function Notice({ text }: { text: string }) {
  return (
    <p role="status" class="notice">
      {text}
    </p>
  );
}

/**
 * A count that moves on every `ms` while the page is open and shown (a hidden tab makes no calls),
 * for what the page reads again on its own: an effect that depends on it runs again.
 */
export function useEvery(ms: number): number {
  const [count, setCount] = useState(0);
  useEffect(() => {
    const timer = setInterval(() => {
      if (document.visibilityState === 'visible') setCount((n) => n + 1);
    }, ms);
    return () => clearInterval(timer);
  }, [ms]);
  return count;
}

/**
 * A list read page by page with the API's cursors: the rows so far, the next page's cursor (null
 * on the last), the last failure, whether a page has arrived, and `load` (null: from the start, so
 * the rows are replaced; a cursor: the next page, added). A failure stays shown until a load succeeds.
 */
export function usePages<T>(fetchPage: (cursor: string | undefined) => Promise<{ rows: T[]; next: string | null }>) {
  const [rows, setRows] = useState<T[]>([]);
  const [cursor, setCursor] = useState<string | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loaded, setLoaded] = useState(false);
  const load = async (from: string | null) => {
    try {
      const page = await fetchPage(from ?? undefined);
      setRows((old) => (from === null ? page.rows : [...old, ...page.rows]));
      setCursor(page.next);
      setError(null);
    } catch (err) {
      setError(err);
    } finally {
      setLoaded(true);
    }
  };
  return { rows, cursor, error, loaded, load };
}
