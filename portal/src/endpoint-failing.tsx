// The warning of an endpoint whose every attempt has failed since a time (its `failing_since`, while
// it is enabled): since when, the last attempt's result and the next attempt (from the latest 100
// deliveries), the failure rate of the last 24 hours (the stats the page reads for its health),
// when the service will disable it if it keeps failing, and what to do.
import { useEffect, useState } from 'hono/jsx/dom';
import { call, type Delivery, type Stats, type Webhook } from './api';
import { outcome } from './deliveries';
import { percentText, successRate } from './health';
import { Time, useEvery } from './ui';

/**
 * The hours of failures after which the service disables a failing endpoint, as the service writes
 * them into the page (AUTO_DISABLE_AFTER_HOURS, at least 12; src/portal/serve.ts).
 */
export function autoDisableHours(): number {
  const hours = Number(document.querySelector<HTMLMetaElement>('meta[name="auto-disable-hours"]')?.content);
  return Number.isInteger(hours) && hours > 0 ? hours : 120;
}

const number = new Intl.NumberFormat('en-US');

/** "7 of 11 attempts failed in 24 hours (63.6%)". */
function failureRateText(stats: Stats | null): string {
  if (stats === null) return '…';
  const { attempts, failed_attempts: failed } = stats.last_24h;
  if (attempts === 0) return 'No attempt in the last 24 hours';
  const rate = percentText(Math.round(10 * (100 - successRate(attempts, failed))) / 10);
  return `${number.format(failed)} of ${number.format(attempts)} ${attempts === 1 ? 'attempt' : 'attempts'} failed in 24 hours (${rate})`;
}

interface Recent {
  last: Delivery | null;
  next: string | null;
}

/** The latest attempt's delivery, and the earliest next attempt, among the latest 100 deliveries. */
function recentOf(deliveries: Delivery[]): Recent {
  let last: Delivery | null = null;
  let next: string | null = null;
  for (const d of deliveries) {
    if (d.last_attempt_at !== null && (last?.last_attempt_at ?? '') < d.last_attempt_at) last = d;
    if (d.status === 'pending' && d.next_attempt_at !== null && (next === null || d.next_attempt_at < next)) {
      next = d.next_attempt_at;
    }
  }
  return { last, next };
}

interface BannerProps {
  webhook: Webhook;
  stats: Stats | null;
  version: number;
  /** A read-only link has no Recover form to point to. */
  readOnly: boolean;
}

export function FailingBanner({ webhook, stats, version, readOnly }: BannerProps) {
  const failing = webhook.is_enabled && Boolean(webhook.failing_since);
  const [recent, setRecent] = useState<Recent | null>(null);
  const tick = useEvery(5000);
  useEffect(() => {
    if (!failing) return;
    call<{ deliveries: Delivery[] }>('GET', 'webhook/delivery', {
      query: { webhook_id: webhook.webhook_id, limit: '100' },
    }).then(
      (page) => setRecent(recentOf(page.deliveries)),
      () => {},
    );
  }, [webhook.webhook_id, webhook.failing_since, failing, version, tick]);
  if (!failing || !webhook.failing_since) return null;

  const hours = autoDisableHours();
  const since = new Date(webhook.failing_since).getTime();
  const off = Number.isNaN(since) ? null : new Date(since + hours * 3_600_000).toISOString();
  return (
    <section aria-labelledby="failing-title" class="panel banner">
      <h2 id="failing-title">This endpoint is failing</h2>
      <dl class="facts">
        <dt>Since</dt>
        <dd>
          <Time iso={webhook.failing_since} />
        </dd>
        <dt>Last result</dt>
        <dd>
          {recent === null ? (
            '…'
          ) : recent.last === null ? (
            'No attempt among the latest deliveries'
          ) : (
            <>
              {outcome(recent.last.last_status, recent.last.last_error)} at <Time iso={recent.last.last_attempt_at} />
            </>
          )}
        </dd>
        <dt>Failure rate</dt>
        <dd>{failureRateText(stats)}</dd>
        <dt>Next attempt</dt>
        <dd>
          {recent === null ? (
            '…'
          ) : recent.next === null ? (
            'None: no delivery waits for a retry'
          ) : (
            <Time iso={recent.next} />
          )}
        </dd>
        <dt>Disabled</dt>
        <dd>
          At its first failed attempt after <Time iso={off} /> ({hours} hours of failures), if it keeps failing
        </dd>
      </dl>
      <p>
        What to do: check that your receiver is up and answers with a 2xx status. Once it answers, the next attempt
        succeeds and this warning goes; then {readOnly ? 'recover' : <a href="#recover">Recover</a>} the deliveries that
        failed meanwhile.
      </p>
    </section>
  );
}
