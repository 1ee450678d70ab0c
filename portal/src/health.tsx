// The endpoint's health: its deliveries and their attempts of the last 24 hours and 7 days as text
// (the failed attempts of deliveries still retrying count), and a chart of the last 24 hours, one
// bar per hour, its attempts by outcome (GET .../webhook/stats). Read again every 5 seconds while
// the page is open and shown, and whenever `version` moves (deliveries sent from the page).
import { useEffect, useState } from 'hono/jsx/dom';
import { type Counts, call, type Stats } from './api';
import { ErrorText, useEvery } from './ui';

const number = new Intl.NumberFormat('en-US');
const percent = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/**
 * The share of attempts that succeeded, in per cent to a tenth, rounded to the nearest (4 of 11 is
 * 36.4) but never to 100 while an attempt failed, nor to 0 while one succeeded.
 */
export function successRate(attempts: number, failed: number): number {
  let tenths = Math.round((1000 * (attempts - failed)) / attempts);
  if (failed > 0 && tenths === 1000) tenths = 999;
  if (failed < attempts && tenths === 0) tenths = 1;
  return tenths / 10;
}

/** "36.4%". */
export const percentText = (rate: number) => `${percent.format(rate)}%`;

/**
 * "Last 24 hours: 120 succeeded, 3 failed, 2 pending; 131 attempts, 8 failed (93.9% succeeded)".
 * The rate is of attempts: a failed attempt, even of a delivery still retrying, keeps it under 100 %.
 */
export function healthText(label: string, c: Counts): string {
  const pending = c.pending > 0 ? `, ${number.format(c.pending)} pending` : '';
  const deliveries = `${number.format(c.succeeded)} succeeded, ${number.format(c.failed)} failed${pending}`;
  if (c.attempts === 0) return `${label}: ${deliveries}; no attempts`;
  const rate = successRate(c.attempts, c.failed_attempts);
  const attempts = `${number.format(c.attempts)} ${c.attempts === 1 ? 'attempt' : 'attempts'}`;
  return `${label}: ${deliveries}; ${attempts}, ${number.format(c.failed_attempts)} failed (${percentText(rate)} succeeded)`;
}

const hourFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

function Chart({ hourly }: { hourly: Stats['hourly'] }) {
  const width = 480;
  const height = 120;
  const slot = width / 24;
  const max = Math.max(1, ...hourly.map((h) => h.attempts));
  const scale = (n: number) => (height * n) / max;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="chart-title" preserveAspectRatio="none">
        <title id="chart-title">
          Attempts per hour over the last 24 hours, succeeded and failed; the busiest hour had {String(max)}.
        </title>
        {hourly.map((h, i) => {
          const failed = h.failed_attempts;
          const succeeded = h.attempts - failed;
          const ok = scale(succeeded);
          const bad = scale(failed);
          const x = i * slot + 2;
          const base = height;
          const at = new Date(h.hour);
          const label = Number.isNaN(at.getTime()) ? h.hour : hourFormat.format(at);
          return (
            <g>
              <title>{`${label}: ${succeeded} attempts succeeded, ${failed} failed`}</title>
              <rect x={x} y={base - ok} width={slot - 4} height={ok} class="ok" />
              <rect x={x} y={base - ok - bad} width={slot - 4} height={bad} class="bad" />
            </g>
          );
        })}
      </svg>
      <div class="ticks" aria-hidden="true">
        {hourly
          .filter((_, i) => i % 6 === 0)
          .map((h) => {
            const at = new Date(h.hour);
            return <span>{Number.isNaN(at.getTime()) ? h.hour : hourFormat.format(at)}</span>;
          })}
      </div>
      <figcaption>
        <span class="key ok" /> succeeded <span class="key bad" /> failed attempts, per hour (your time zone)
      </figcaption>
    </figure>
  );
}

/** How often an open page reads its health again. */
const REFRESH_MS = 5000;

/**
 * The endpoint's stats (GET .../webhook/stats), read again every 5 seconds while the page is open
 * and shown, and whenever `version` moves: the health and a failing endpoint's warning read them.
 */
export function useStats(id: string, version: number) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [error, setError] = useState<unknown>(null);
  const tick = useEvery(REFRESH_MS);
  useEffect(() => {
    call<Stats>('GET', 'webhook/stats', { query: { webhook_id: id } }).then(
      (s) => {
        setStats(s);
        setError(null);
      },
      (err) => setError(new Error(`Health is not available: ${err instanceof Error ? err.message : String(err)}`)),
    );
  }, [id, version, tick]);
  return { stats, error };
}

export function Health({ stats, error }: { stats: Stats | null; error: unknown }) {
  return (
    <section aria-labelledby="health-title" class="panel">
      <h2 id="health-title">Health</h2>
      <ErrorText error={error} />
      {stats ? (
        <>
          <p class="health">{healthText('Last 24 hours', stats.last_24h)}</p>
          <p class="health">{healthText('Last 7 days', stats.last_7d)}</p>
          <Chart hourly={stats.hourly} />
        </>
      ) : error === null ? (
        <p class="hint">Loading…</p>
      ) : null}
    </section>
  );
}
