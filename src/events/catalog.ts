// The event catalog: the types of event the platform publishes, each with a description and an
// example of its `data`. The platform edits catalog.json; the Worker bundles it as a JSON module.
import type { Context } from 'hono';
import type { AppEnv } from '../http/app-env';
import { success } from '../http/envelope';
import catalog from './catalog.json';

/** The catalog's reply `value`, written once per isolate. */
let catalogJson: string | undefined;

/** GET /v1.0/app/nft/event-types: the catalog, for any application token. No storage. */
export async function readEventTypes(c: Context<AppEnv>): Promise<Response> {
  catalogJson ??= JSON.stringify({ event_types: catalog });
  return success(c, { value: catalogJson });
}
