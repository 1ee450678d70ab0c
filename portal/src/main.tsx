// The application portal (docs/portal.md): opened by a link /portal/#token=<application token>.
import { render, useEffect, useState } from 'hono/jsx/dom';
import { claimsOf, endSession, storedToken, takeLink, useToken } from './api';
import { EventTypesPage } from './catalog';
import { DeliveryPage } from './delivery';
import { EndpointPage } from './endpoint';
import { EndpointsPage } from './endpoints';
import { EventPage } from './event';
import { onNavigate, paths, routeOf, takeNotice } from './router';
import { Search } from './search';
import { Heading, Link } from './ui';

// First of all: the token leaves the address bar.
const link = takeLink();
let token = storedToken();
const claims = token === null ? null : claimsOf(token);

/** Shows that the link has expired (set by the App). */
let showExpired = () => {};
// A new link opened in this tab or frame while the page is open changes only the fragment: its
// token is taken the same way, and the page starts again with it (another application, maybe).
// One it cannot read leaves no token, and the page says that the link has expired.
addEventListener('hashchange', () => {
  const next = takeLink();
  if (next === null) return;
  if ('token' in next) {
    location.reload();
  } else {
    token = null;
    endSession();
    showExpired();
  }
});

function Expired({ never }: { never: boolean }) {
  return (
    <main class="expired">
      <Heading>{never ? 'This page needs a link' : 'This link has expired'}</Heading>
      <p>
        {never
          ? 'The webhook portal opens from a link that your platform gives you. Open it from there.'
          : 'Portal links work for a short time only. Go back to your platform and open the portal again to get a new link.'}
      </p>
    </main>
  );
}

function App() {
  const [route, setRoute] = useState(routeOf(location.pathname));
  // What the last action said, shown on the page it went to (the list after a deletion).
  const [notice, setNotice] = useState('');
  const [expired, setExpired] = useState(link !== null && 'unreadable' in link);
  useEffect(() => {
    const update = () => {
      setRoute(routeOf(location.pathname));
      setNotice(takeNotice());
    };
    const stop = onNavigate(update);
    // A navigation made before this effect ran (a search submitted at once) is taken now.
    update();
    return stop;
  }, []);
  showExpired = () => setExpired(true);
  useToken(token, () => setExpired(true));

  if (token === null || expired) return <Expired never={token === null && !expired} />;
  const readOnly = claims?.readOnly ?? false;
  return (
    <>
      <header class="top">
        <Link href={paths.endpoints} class="brand">
          Webhooks
        </Link>
        <nav aria-label="Portal">
          <Link href={paths.endpoints}>Endpoints</Link>
          <Link href={paths.eventTypes}>Event types</Link>
        </nav>
        <Search />
        <span class="who">
          {claims?.app ? <span>{claims.app}</span> : null}
          {readOnly ? <span class="badge off">Read-only</span> : null}
        </span>
      </header>
      {readOnly ? (
        <p class="readonly-note">This link is read-only: you can look at everything, and change nothing.</p>
      ) : null}
      {route.page === 'endpoints' ? (
        <EndpointsPage readOnly={readOnly} notice={notice} />
      ) : route.page === 'endpoint' ? (
        <EndpointPage id={route.id} readOnly={readOnly} />
      ) : route.page === 'delivery' ? (
        <DeliveryPage id={route.id} delivery={route.delivery} readOnly={readOnly} />
      ) : route.page === 'event' ? (
        <EventPage event={route.event} />
      ) : route.page === 'event-types' ? (
        <EventTypesPage />
      ) : (
        <main>
          <Heading>Page not found</Heading>
          <p>
            <Link href={paths.endpoints}>All endpoints</Link>
          </p>
        </main>
      )}
    </>
  );
}

render(<App />, document.getElementById('app') as HTMLElement);
