// The endpoint's page, its head (the URL as the heading, and its state) and what the endpoint is:
// what it receives in words (event types and filter together), then each setting.
import type { Webhook } from './api';
import { DESTINATIONS, type DestinationType, destinationLabel } from './endpoint-destination';
import { filterText, orderingText } from './endpoint-filter';
import { EndpointState } from './endpoint-state';
import { receivesText } from './receives';
import { Heading, Time, Url } from './ui';

/**
 * The URL as the heading, and the state: first, so a narrow screen shows them without scrolling (a
 * failing endpoint's warning, endpoint-failing, says since when).
 */
export function EndpointHead({ webhook }: { webhook: Webhook }) {
  return (
    <>
      <Heading>
        <span class="url">
          <Url url={webhook.url} />
        </span>
      </Heading>
      <dl class="facts head-facts">
        <dt>State</dt>
        <dd>
          <EndpointState webhook={webhook} warned />
        </dd>
      </dl>
    </>
  );
}

export function EndpointFacts({ webhook }: { webhook: Webhook }) {
  return (
    <dl class="facts">
      <dt>Receives</dt>
      <dd>{receivesText(webhook)}</dd>
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
  );
}
