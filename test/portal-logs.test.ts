import { afterEach, describe, expect, it, vi } from 'vitest';
import { deliverDue } from './helpers/objects';
import { receiver } from './helpers/receiver';
import { fetchAndWait, ORIGIN, PATH, publishEvent, registerWebhook } from './helpers/requests';
import { bearer, tokenFor } from './helpers/tokens';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('the request log names the portal operations', () => {
  it('patch, stats, resend and event-types, with the webhook id and the code', async () => {
    const app = 'logs-portal';
    const { id } = await registerWebhook(app);
    receiver();
    const { deliveryIds } = await publishEvent(app);
    const token = bearer(await tokenFor(app));
    const lines: Record<string, unknown>[] = [];
    vi.spyOn(console, 'info').mockImplementation((line: unknown) => {
      lines.push(JSON.parse(String(line)) as Record<string, unknown>);
    });
    const send = (method: string, path: string, body?: unknown) =>
      fetchAndWait(
        {},
        new Request(ORIGIN + path, {
          method,
          headers: { ...token, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        }),
      );
    await send('PATCH', PATH, { webhook_id: id, description: 'logged' });
    await send('GET', `${PATH}/stats?webhook_id=${id}`);
    await send('POST', `${PATH}/delivery/resend`, { delivery_id: deliveryIds[0] });
    await send('GET', '/v1.0/app/nft/event-types');
    await send('PATCH', PATH, { webhook_id: id, rate_limit: 0 });
    const requests = lines.filter((l) => l.msg === 'request');
    expect(requests.map((l) => [l.op, l.status, l.return, l.webhook_id])).toEqual([
      ['patch', 200, 0, id],
      ['stats', 200, 0, id],
      ['resend', 202, 0, id],
      ['event-types', 200, 0, null],
      ['patch', 400, 64062, null],
    ]);
    expect(requests.map((l) => l.d1_attempts)).toEqual([1, 1, 1, 0, 0]);
    // The resent delivery is sent while the receiver is still in place.
    await deliverDue(id);
  });
});
