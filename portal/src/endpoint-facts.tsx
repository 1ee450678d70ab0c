// The endpoint's page, its head: the URL as the heading, and what the endpoint is.
import type { Webhook } from './api';
import { DESTINATIONS, type DestinationType, destinationLabel } from './endpoint-destination';
import { filterText, orderingText } from './endpoint-filter';
import { EndpointState } from './endpoint-state';
import { eventTypesText } from './endpoints';
import { Heading, Time } from './ui';

export function EndpointFacts({ webhook }: { webhook: Webhook }) {
  return (
    <>
      <Heading>
        <span class="url">{webhook.url}</span>
      </Heading>
      <dl class="facts">
        <dt>Destination</dt>
        <dd>
          {destinationLabel(webhook)}
          {DESTINATIONS[(webhook.destination?.type as DestinationType | undefined) ?? 'http'].fields.map((f) =>
            f.secret ? (
              <span class="hint"> · {f.label}: set</span>
            ) : (
              <span>
                {' '}
                · {f.label}: <code>{webhook.destination?.[f.name] ?? ''}</code>
              </span>
            ),
          )}
        </dd>
        {Object.keys(webhook.headers ?? {}).length === 0 ? null : (
          <>
            <dt>Custom headers</dt>
            <dd>
              {Object.entries(webhook.headers ?? {}).map(([name, value]) => (
                <div>
                  <code>
                    {name}: {value}
                  </code>
                </div>
              ))}
            </dd>
          </>
        )}
        <dt>Description</dt>
        <dd>{webhook.description ?? '—'}</dd>
        <dt>State</dt>
        <dd>
          <EndpointState webhook={webhook} />
        </dd>
        <dt>Event types</dt>
        <dd>{eventTypesText(webhook.event_types)}</dd>
        <dt>Rate limit</dt>
        <dd>{webhook.rate_limit == null ? 'The service’s own' : `${webhook.rate_limit} a second`}</dd>
        <dt>Filter</dt>
        <dd>{webhook.filter == null ? 'None' : <pre class="filter-json">{filterText(webhook)}</pre>}</dd>
        <dt>Ordering</dt>
        <dd>{orderingText(webhook.ordering)}</dd>
        <dt>Created</dt>
        <dd>
          <Time iso={webhook.created_at} />
        </dd>
        <dt>Endpoint id</dt>
        <dd>
          <code>{webhook.webhook_id}</code>
        </dd>
      </dl>
    </>
  );
}
