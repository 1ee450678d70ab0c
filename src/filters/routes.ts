import type { HonoBase } from 'hono/hono-base';
import { authenticate, requireWrite } from '../auth/bearer';
import type { AppEnv } from '../http/app-env';
import { Code } from '../http/envelope';
import { limitApplication } from '../http/limits';
import { mountPath } from '../http/operations';
import { tryFilter } from './try';
import { editValues, readValues } from './values';

export const VALUES_PATH = '/v1.0/app/nft/webhook/values';
export const FILTER_TEST_PATH = '/v1.0/app/nft/webhook/filter/test';

/** What an application does with its webhooks' filters: their value sets (a change needs a token that may write), trials. */
export function mountFilters(app: HonoBase<AppEnv>) {
  const guarded = [authenticate, limitApplication];
  const writing = [authenticate, requireWrite, limitApplication];
  mountPath(app, VALUES_PATH, {
    GET: { name: 'values', code: Code.queryFail, handlers: [...guarded, readValues] },
    POST: { name: 'edit-values', code: Code.updateFail, handlers: [...writing, editValues] },
  });
  mountPath(app, FILTER_TEST_PATH, {
    POST: { name: 'filter-test', code: Code.queryFail, handlers: [...guarded, tryFilter] },
  });
}
