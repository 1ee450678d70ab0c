// An HTTP endpoint: the signed body POSTed to the webhook's URL with its custom headers.
import { attempt } from '../attempt';
import type { Provider } from './provider';

/** `url`: the webhook's URL, already checked against the URL rules by the pass. */
export const httpProvider = (url: string): Provider => ({
  send: (destination, message, { fetcher, timeoutMs }) =>
    attempt(
      {
        url,
        body: message.body,
        headers: { ...destination.headers, ...message.signature },
        timeoutMs,
        secrets: destination.secrets,
      },
      fetcher,
    ),
});
