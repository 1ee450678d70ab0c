// An endpoint's state as the page and the list show it: Enabled or Disabled, and why and since
// when: disabled by the service (its endpoint answered 410 Gone, or every attempt failed since a
// time) or by hand; an enabled endpoint that is failing says since when.
import type { Webhook } from './api';
import { Time } from './ui';

/** Why and since when it is disabled (nothing while it is enabled, or when the reason is not known). */
function DisabledWhy({ webhook }: { webhook: Webhook }) {
  const on = webhook.disabled_at ? (
    <>
      {' on '}
      <Time iso={webhook.disabled_at} />
    </>
  ) : null;
  switch (webhook.disabled_reason) {
    case 'gone':
      return <>The service disabled it{on}: the endpoint answered 410 Gone.</>;
    case 'failing':
      return (
        <>
          The service disabled it{on}: every attempt failed
          {webhook.failing_since ? (
            <>
              {' since '}
              <Time iso={webhook.failing_since} />
            </>
          ) : null}
          .
        </>
      );
    case 'application':
      return <>Disabled by hand{on}.</>;
    default:
      return null;
  }
}

/** The state badge, then why and since when. */
export function EndpointState({ webhook }: { webhook: Webhook }) {
  const enabled = webhook.is_enabled;
  const known = enabled ? Boolean(webhook.failing_since) : Boolean(webhook.disabled_reason);
  return (
    <span class="state">
      <span class={enabled ? 'badge ok' : 'badge off'}>{enabled ? 'Enabled' : 'Disabled'}</span>
      {known ? (
        <span class="why">
          {enabled ? (
            <>
              Failing since <Time iso={webhook.failing_since ?? null} />.
            </>
          ) : (
            <DisabledWhy webhook={webhook} />
          )}
        </span>
      ) : null}
    </span>
  );
}
