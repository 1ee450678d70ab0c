// The endpoint's health: succeeded and failed deliveries of the last 24 hours and 7 days as text,
// and a chart of the last 24 hours, one bar per hour, by outcome (GET .../webhook/stats).
import { useEffect, useState } from 'hono/jsx/dom';
import { type Counts, call, type Stats } from './api';
import { ErrorText } from './ui';

const number = new Intl.NumberFormat('en-US');
const percent = new Intl.NumberFormat('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });

/** "Last 24 hours: 120 succeeded, 3 failed (97.6%)", and what is still pending. */
export function healthText(label: string, c: Counts): string {
  const finished = c.succeeded + c.failed;
  const rate = finished === 0 ? '' : ` (${percent.format((100 * c.succeeded) / finished)}%)`;
  const pending = c.pending > 0 ? `, ${number.format(c.pending)} pending` : '';
  return `${label}: ${number.format(c.succeeded)} succeeded, ${number.format(c.failed)} failed${rate}${pending}`;
}

const hourFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

function Chart({ hourly }: { hourly: Stats['hourly'] }) {
  const width = 480;
  const height = 120;
  const slot = width / 24;
  const max = Math.max(1, ...hourly.map((h) => h.succeeded + h.failed));
  const scale = (n: number) => (height * n) / max;
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${width} ${height}`} role="img" aria-labelledby="chart-title" preserveAspectRatio="none">
        <title id="chart-title">
          Deliveries per hour over the last 24 hours, succeeded and failed; the busiest hour had {String(max)}.
        </title>
        {hourly.map((h, i) => {
          const ok = scale(h.succeeded);
          const bad = scale(h.failed);
          const x = i * slot + 2;
          const base = height;
          const at = new Date(h.hour);
          const label = Number.isNaN(at.getTime()) ? h.hour : hourFormat.format(at);
          return (
            <g>
              <title>{`${label}: ${h.succeeded} succeeded, ${h.failed} failed`}</title>
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
        <span class="key ok" /> succeeded <span class="key bad" /> failed, per hour (your time zone)
      </figcaption>
    </figure>
  );
}

export function Health({ id, version }: { id: string; version: number }) {
  const [stats, setStats] = useState<Stats | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    call<Stats>('GET', 'webhook/stats', { query: { webhook_id: id } }).then(
      (s) => {
        setStats(s);
        setError(null);
      },
      (err) => setError(new Error(`Health is not available: ${err instanceof Error ? err.message : String(err)}`)),
    );
  }, [id, version]);
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
