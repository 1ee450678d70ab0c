// An endpoint's state as the page and the list show it: Enabled, Failing or Disabled, and why and
// since when: disabled by the service (its endpoint answered 410 Gone, every attempt failed since
// a time, or its destination's API refused its credentials or does not exist) or by hand; an enabled endpoint whose attempts all fail is Failing, since when.
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
    case 'forbidden':
      return (
        <>
          The service disabled it{on}: the destination refused its credentials (access denied). Give it credentials with
          permission to send, then enable it.
        </>
      );
    case 'not_found':
      return (
        <>
          The service disabled it{on}: the destination does not exist (its queue, bus or topic was not found). Point it
          at one that exists, then enable it.
        </>
      );
    case 'application':
      return <>Disabled by hand{on}.</>;
    default:
      return null;
  }
}

/** Enabled, Failing (enabled, but every attempt has failed since a time) or Disabled. */
export const stateOf = (webhook: Webhook) =>
  !webhook.is_enabled ? 'Disabled' : webhook.failing_since ? 'Failing' : 'Enabled';

const BADGE = { Enabled: 'badge ok', Failing: 'badge warn', Disabled: 'badge off' } as const;

/** The state badge, then why and since when (a failing one's why left to its warning when `warned`). */
export function EndpointState({ webhook, warned = false }: { webhook: Webhook; warned?: boolean }) {
  const state = stateOf(webhook);
  const known = (state === 'Failing' && !warned) || (state === 'Disabled' && Boolean(webhook.disabled_reason));
  return (
    <span class="state">
      <span class={BADGE[state]}>{state}</span>
      {known ? (
        <span class="why">
          {state === 'Failing' ? (
            <>
              Enabled, but every attempt has failed since <Time iso={webhook.failing_since ?? null} />.
            </>
          ) : (
            <DisabledWhy webhook={webhook} />
          )}
        </span>
      ) : null}
    </span>
  );
}
