// Where an endpoint delivers: the type picker of the endpoint form, each type's fields with their
// help (credentials entered once, then shown as set: left empty, the stored ones are kept), the
// custom headers of an HTTP endpoint, and how the destination reads on the list and the page.
import { useState } from 'hono/jsx/dom';
import type { Webhook } from './api';

export type DestinationType = 'http' | 'cloudflare_queue' | 'aws_sqs' | 'aws_eventbridge' | 'gcp_pubsub';

interface Field {
  name: string;
  label: string;
  help: string;
  /** A credential: write-only, never shown again. */
  secret?: boolean;
  /** A JSON object typed as text (the service account's key file). */
  json?: boolean;
}

export const DESTINATIONS: Record<DestinationType, { label: string; fields: Field[] }> = {
  http: { label: 'HTTP endpoint', fields: [] },
  cloudflare_queue: {
    label: 'Cloudflare Queue',
    fields: [
      { name: 'account_id', label: 'Account id', help: 'The Cloudflare account’s id: 32 hexadecimal digits.' },
      { name: 'queue_id', label: 'Queue id', help: 'The queue’s id (not its name): 32 hexadecimal digits.' },
      { name: 'api_token', label: 'API token', help: 'A token with Queues write on this queue only.', secret: true },
    ],
  },
  aws_sqs: {
    label: 'Amazon SQS',
    fields: [
      {
        name: 'queue_url',
        label: 'Queue URL',
        help: 'https://sqs.<region>.amazonaws.com/<account>/<queue>; a .fifo queue keeps a FIFO endpoint’s order.',
      },
      {
        name: 'access_key_id',
        label: 'Access key id',
        help: 'Of credentials allowed sqs:SendMessage on this queue only.',
      },
      { name: 'secret_access_key', label: 'Secret access key', help: 'Entered once; never shown again.', secret: true },
    ],
  },
  aws_eventbridge: {
    label: 'Amazon EventBridge',
    fields: [
      { name: 'region', label: 'Region', help: 'The bus’s AWS region, e.g. us-east-1.' },
      { name: 'event_bus', label: 'Event bus', help: 'The bus’s name or ARN.' },
      { name: 'source', label: 'Source', help: 'The events’ Source, e.g. com.example.nft (not aws.*).' },
      {
        name: 'access_key_id',
        label: 'Access key id',
        help: 'Of credentials allowed events:PutEvents on this bus only.',
      },
      { name: 'secret_access_key', label: 'Secret access key', help: 'Entered once; never shown again.', secret: true },
    ],
  },
  gcp_pubsub: {
    label: 'Google Pub/Sub',
    fields: [
      { name: 'topic', label: 'Topic', help: 'projects/<project>/topics/<topic>.' },
      {
        name: 'service_account_key',
        label: 'Service account key',
        help: 'The key file’s JSON, of a service account with roles/pubsub.publisher on this topic only.',
        secret: true,
        json: true,
      },
    ],
  },
};

const typeOf = (webhook?: Webhook): DestinationType =>
  (webhook?.destination?.type as DestinationType | undefined) ?? 'http';

/** How the destination reads: its type's name (nothing for HTTP, whose URL says it). */
export const destinationLabel = (webhook: Webhook) => DESTINATIONS[typeOf(webhook)].label;

/** The type picker and the chosen type's fields; `onType` tells the form which type is chosen. */
export function DestinationFields({ initial, onType }: { initial?: Webhook; onType: (t: DestinationType) => void }) {
  const [type, setType] = useState<DestinationType>(typeOf(initial));
  const kept = initial !== undefined && typeOf(initial) === type;
  return (
    <fieldset>
      <legend>Destination</legend>
      <label>
        Type
        <select
          name="destination_type"
          onChange={(e: Event) => {
            const next = (e.target as HTMLSelectElement).value as DestinationType;
            setType(next);
            onType(next);
          }}
        >
          {(Object.keys(DESTINATIONS) as DestinationType[]).map((t) => (
            <option value={t} selected={t === type}>
              {DESTINATIONS[t].label}
            </option>
          ))}
        </select>
      </label>
      {DESTINATIONS[type].fields.map((f) => {
        const help = (
          <span class="hint">
            {f.help}
            {f.secret && kept ? ' Set: leave empty to keep it.' : ''}
          </span>
        );
        return f.json ? (
          <label>
            {f.label}
            <textarea name={`destination.${f.name}`} rows={4} required={!kept} placeholder={kept ? 'set' : ''} />
            {help}
          </label>
        ) : (
          <label>
            {f.label}
            <input
              name={`destination.${f.name}`}
              type={f.secret ? 'password' : 'text'}
              required={!(f.secret && kept)}
              placeholder={f.secret && kept ? 'set' : ''}
              value={f.secret || !kept ? '' : String(initial?.destination?.[f.name] ?? '')}
              autocomplete="off"
            />
            {help}
          </label>
        );
      })}
    </fieldset>
  );
}

/**
 * The `destination` the form gives: its type and fields; credentials left empty are left out
 * (the stored ones are kept). Throws when the key file is not JSON.
 */
export function destinationFromForm(form: FormData): Record<string, unknown> {
  const type = String(form.get('destination_type') ?? 'http') as DestinationType;
  const destination: Record<string, unknown> = { type };
  for (const f of DESTINATIONS[type].fields) {
    const value = String(form.get(`destination.${f.name}`) ?? '').trim();
    if (value === '' && f.secret) continue;
    if (f.json) {
      try {
        destination[f.name] = JSON.parse(value);
      } catch {
        throw new Error(`${f.label} must be the key file’s JSON.`);
      }
    } else destination[f.name] = value;
  }
  return destination;
}

/** Custom headers as the form shows them: one `Name: value` a line (sensitive ones as the service masks them). */
export const headersText = (webhook?: Webhook) =>
  Object.entries(webhook?.headers ?? {})
    .map(([name, value]) => `${name}: ${value}`)
    .join('\n');

/** The custom headers typed, and which are sensitive (a comma-separated list of names). */
export function headersFromForm(form: FormData): { headers: Record<string, string>; sensitive: string[] } {
  const headers: Record<string, string> = {};
  for (const line of String(form.get('headers') ?? '').split('\n')) {
    const colon = line.indexOf(':');
    if (line.trim() === '') continue;
    if (colon <= 0) throw new Error(`Headers: “${line.trim()}” is not Name: value.`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  const sensitive = String(form.get('sensitive_headers') ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter((n) => n !== '');
  return { headers, sensitive };
}
