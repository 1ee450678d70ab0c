// The endpoint's page, its two inline forms: sending a test event, and recovering failed deliveries.
// On a disabled endpoint both are unavailable, and say why: it has to be enabled first.
import { ApiError, call, type EventType, type Webhook } from './api';
import type { Act } from './endpoint-actions';

/** What a disabled endpoint's unavailable tools say. */
export const ENABLE_FIRST = 'The endpoint is disabled: enable it first to send a test event or recover deliveries.';

/**
 * Runs `what`; the service's refusal because the webhook is disabled (409: the page had not seen
 * it yet) becomes the next step to take, `again` saying what to do after enabling it.
 */
export async function enableFirst<T>(again: string, what: () => Promise<T>): Promise<T> {
  try {
    return await what();
  } catch (err) {
    if (err instanceof ApiError && err.status === 409 && /disabled/.test(err.reason)) {
      throw new Error(`The endpoint is disabled: enable it first (Enable, on the endpoint's page), then ${again}.`);
    }
    throw err;
  }
}

/** A datetime-local value for `date` (the reader's time zone). */
const localInput = (date: Date) => {
  const shifted = new Date(date.getTime() - date.getTimezoneOffset() * 60_000);
  return shifted.toISOString().slice(0, 16);
};

interface ToolProps {
  id: string;
  /** The endpoint is disabled: the form's button is unavailable. */
  off: boolean;
  act: Act;
  /** Called when new deliveries are on their way, so the deliveries and health are read again. */
  sent: () => void;
}

/** Send test event, with the Test event type (webhook.test first, then the catalog's types). */
export function TestEventForm({ id, off, act, sent, catalog }: ToolProps & { catalog: EventType[] }) {
  const types = ['webhook.test', ...catalog.map((t) => t.type).filter((t) => t !== 'webhook.test')];
  return (
    <form
      class="inline"
      onSubmit={(e: Event) => {
        e.preventDefault();
        const type = String(new FormData(e.target as HTMLFormElement).get('type'));
        act(async () => {
          const done = await enableFirst('send the test event again', () =>
            call<{ event_id: string; delivery_id: string }>('POST', 'webhook/test', { body: { webhook_id: id, type } }),
          );
          sent();
          return `Test event sent: ${done.event_id}.`;
        });
      }}
    >
      <label>
        Test event type
        <select name="type">
          {types.map((t) => (
            <option value={t}>{t}</option>
          ))}
        </select>
      </label>
      <button type="submit" disabled={off} aria-describedby={off ? 'enable-first' : undefined}>
        Send test event
      </button>
    </form>
  );
}

/** Recover: Since (a day ago by default), and Recover failed deliveries. */
export function RecoverForm({ id, off, act, sent }: ToolProps) {
  return (
    <form
      class="inline"
      onSubmit={(e: Event) => {
        e.preventDefault();
        const since = String(new FormData(e.target as HTMLFormElement).get('since'));
        act(async () => {
          const date = new Date(since);
          if (Number.isNaN(date.getTime())) throw new Error('Since: choose a date and time.');
          const done = await enableFirst('recover again', () =>
            call<{ deliveries: number }>('POST', 'webhook/recover', {
              body: { webhook_id: id, since: date.toISOString() },
            }),
          );
          sent();
          return `Recovery started: ${done.deliveries} failed ${done.deliveries === 1 ? 'delivery' : 'deliveries'} will be attempted again.`;
        });
      }}
    >
      <fieldset id="recover">
        <legend>Recover</legend>
        <label>
          Since
          <input type="datetime-local" name="since" required value={localInput(new Date(Date.now() - 86_400_000))} />
        </label>
        <button type="submit" disabled={off} aria-describedby={off ? 'enable-first' : undefined}>
          Recover failed deliveries
        </button>
      </fieldset>
    </form>
  );
}

/** The section "Test and recover": both forms, and why they are unavailable on a disabled endpoint. */
export function EndpointTools({
  webhook,
  catalog,
  act,
  sent,
}: {
  webhook: Webhook;
  catalog: EventType[];
  act: Act;
  sent: () => void;
}) {
  const off = !webhook.is_enabled;
  return (
    <section aria-label="Test and recover" class="panel">
      {off ? (
        <p class="hint" id="enable-first">
          {ENABLE_FIRST}
        </p>
      ) : null}
      <div class="tools">
        <TestEventForm id={webhook.webhook_id} off={off} act={act} sent={sent} catalog={catalog} />
        <RecoverForm id={webhook.webhook_id} off={off} act={act} sent={sent} />
      </div>
    </section>
  );
}
