// What docs/api.md promises about an event's `data`: the object is written again as JSON. Kept
// exactly: numbers' digits, strings' characters, the order of keys. Normalised: whitespace,
// string escapes, a key given twice (its last value, at the place of its first), and keys that
// are array indices (first, ascending).
import { describe, expect, it } from 'vitest';
import { insertWebhook } from './helpers/database';
import { deliveriesOfEvent, storedDelivery } from './helpers/objects';
import { expectValue } from './helpers/replies';
import { eventRequest, fetchAndWait } from './helpers/requests';
import { bearer, platformToken } from './helpers/tokens';

/** Publishes `body` (JSON text, as sent) and answers the `data` text its delivery stores (the body it sends). */
async function storedData(app: string, data: string): Promise<string> {
  const hook = await insertWebhook(app);
  const res = await fetchAndWait(
    {},
    eventRequest(`{"app_id": "${app}", "type": "NEW_NFT", "data": ${data}}`, bearer(await platformToken())),
  );
  const { value } = await expectValue<{ event_id: string }>(res, 202);
  const [deliveryId] = await deliveriesOfEvent(hook, value.event_id);
  const payload = (await storedDelivery(hook, deliveryId as string))?.payload;
  return /,"data":(.*)\}$/.exec(payload as string)?.[1] as string;
}

describe("an event's data, as the webhooks receive it", () => {
  it('keeps every number’s digits, every string’s characters and the order of keys', async () => {
    expect(
      await storedData('data-app-1', '{"z": 1.50, "a": 1e3, "m": 12345678901234567890, "s": "tab\\there é"}'),
    ).toBe('{"z":1.50,"a":1e3,"m":12345678901234567890,"s":"tab\\there é"}');
  });

  it('drops whitespace, rewrites string escapes, collapses a repeated key, and puts index keys first', async () => {
    expect(
      await storedData('data-app-2', '{ "b" : 1, "10": 2, "2": 3, "e": "\\u00e9\\/x\\u001f", "b": [ 5 , 6 ] }'),
    ).toBe('{"2":3,"10":2,"b":[5,6],"e":"é/x\\u001f"}');
  });
});
