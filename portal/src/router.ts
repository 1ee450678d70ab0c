// The portal's pages, by path under /portal/ (src/portal/serve.ts answers each with the page).
// Ids stay decimal strings.

export type Route =
  | { page: 'endpoints' }
  | { page: 'endpoint'; id: string }
  | { page: 'delivery'; id: string | null; delivery: string }
  | { page: 'event'; event: string }
  | { page: 'event-types' }
  | { page: 'missing' };

const ID = '([1-9]\\d{0,18})';
const ENDPOINT = new RegExp(`^/portal/endpoints/${ID}$`);
const DELIVERY = new RegExp(`^/portal/endpoints/${ID}/deliveries/${ID}$`);
/** A delivery found by its id alone (the header's search): its endpoint is not in the reply. */
const DELIVERY_ONLY = new RegExp(`^/portal/deliveries/${ID}$`);
/** An event id as the service makes them (`evt_` and 32 hex digits), and room for other forms. */
export const EVENT_ID = /^evt_[A-Za-z0-9]{1,64}$/;
const EVENT = /^\/portal\/events\/(evt_[A-Za-z0-9]{1,64})$/;

export function routeOf(path: string): Route {
  if (path === '/portal/' || path === '/portal') return { page: 'endpoints' };
  if (path === '/portal/event-types') return { page: 'event-types' };
  const endpoint = ENDPOINT.exec(path);
  if (endpoint) return { page: 'endpoint', id: endpoint[1] as string };
  const delivery = DELIVERY.exec(path);
  if (delivery) return { page: 'delivery', id: delivery[1] as string, delivery: delivery[2] as string };
  const only = DELIVERY_ONLY.exec(path);
  if (only) return { page: 'delivery', id: null, delivery: only[1] as string };
  const event = EVENT.exec(path);
  if (event) return { page: 'event', event: event[1] as string };
  return { page: 'missing' };
}

export const paths = {
  endpoints: '/portal/',
  endpoint: (id: string) => `/portal/endpoints/${id}`,
  /** A delivery's page; without its endpoint (not known from a delivery id alone), by the id only. */
  delivery: (id: string | null, delivery: string) =>
    id === null ? `/portal/deliveries/${delivery}` : `/portal/endpoints/${id}/deliveries/${delivery}`,
  event: (event: string) => `/portal/events/${event}`,
  eventTypes: '/portal/event-types',
};

const listeners = new Set<() => void>();
export const onNavigate = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

/** Whether the page has changed since it loaded: a new page's heading then takes the focus. */
export let navigated = false;

let notice = '';
/** What the page that `navigate` opened has to say first (once: taking it clears it). */
export function takeNotice(): string {
  const text = notice;
  notice = '';
  return text;
}

/**
 * Goes to `href` (a path of the portal) without loading the page again; `said` is announced on
 * the page it opens (what the last action did, as "Endpoint deleted").
 */
export function navigate(href: string, said = '') {
  navigated = true;
  notice = said;
  history.pushState(null, '', href);
  window.scrollTo(0, 0);
  for (const listener of listeners) listener();
}

addEventListener('popstate', () => {
  navigated = true;
  notice = '';
  for (const listener of listeners) listener();
});
