// The header's search: an event id (`evt_…`) opens the event's screen (its deliveries to every
// endpoint), a delivery id (digits) the delivery's page; anything else is refused where it was typed.
import { useState } from 'hono/jsx/dom';
import { EVENT_ID, navigate, paths } from './router';

const DELIVERY_ID = /^[1-9]\d{0,18}$/;

/** Where a search for `text` goes; null when it is neither an event id nor a delivery id. */
export function searchPath(text: string): string | null {
  const id = text.trim();
  if (EVENT_ID.test(id)) return paths.event(id);
  if (DELIVERY_ID.test(id)) return paths.delivery(null, id);
  return null;
}

export function Search() {
  const [refused, setRefused] = useState(false);
  return (
    <search>
      <form
        class="search-form"
        onSubmit={(e: Event) => {
          e.preventDefault();
          const input = (e.target as HTMLFormElement).elements.namedItem('q') as HTMLInputElement;
          const path = searchPath(input.value);
          setRefused(path === null);
          if (path !== null) navigate(path);
        }}
      >
        <label for="search-q" class="visually-hidden">
          Event or delivery id
        </label>
        <input
          id="search-q"
          name="q"
          type="search"
          autocomplete="off"
          spellcheck={false}
          placeholder="evt_… or a delivery id"
          aria-invalid={refused ? 'true' : undefined}
          aria-describedby={refused ? 'search-refused' : undefined}
          onInput={() => setRefused(false)}
        />
        <button type="submit">Find</button>
        {refused ? (
          <p role="alert" class="error search-refused" id="search-refused">
            Enter an event id (evt_…) or a delivery id (digits).
          </p>
        ) : null}
      </form>
    </search>
  );
}
