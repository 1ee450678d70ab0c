// What the docs say about the code, checked against the code: the `op` values of the log line,
// the number of operations in the OpenAPI document, and how often the Cron Trigger runs.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';

const root = new URL('../..', import.meta.url).pathname;
const read = (file: string) => readFileSync(join(root, file), 'utf8');
const docs = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** The operation names the route tables give (`name: '...'`), the log line's `op`. */
function operationNames(dir = join(root, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return operationNames(path);
    if (!entry.name.endsWith('.ts')) return [];
    const text = readFileSync(path, 'utf8');
    return [...text.matchAll(/\bname: '([a-z]+)',\s*code: Code\./g)].map((m) => m[1] as string);
  });
}

describe('the docs, against the code', () => {
  it('failures.md lists every `op` value of the request log line', () => {
    const names = operationNames();
    expect(names.length).toBeGreaterThanOrEqual(10);
    const text = read('docs/failures.md');
    const paragraph = text.slice(text.indexOf('`op` names the operation'));
    for (const name of names) expect(paragraph.slice(0, 600), name).toContain(`\`${name}\``);
  });

  it('development.md gives the number of operations docs/openapi.json describes', () => {
    const spec = JSON.parse(read('docs/openapi.json')) as { paths: Record<string, Record<string, unknown>> };
    const count = Object.values(spec.paths).flatMap((p) =>
      Object.keys(p).filter((m) => ['get', 'put', 'post', 'delete', 'patch'].includes(m)),
    ).length;
    const words = [
      'zero',
      'one',
      'two',
      'three',
      'four',
      'five',
      'six',
      'seven',
      'eight',
      'nine',
      'ten',
      'eleven',
      'twelve',
      'thirteen',
      'fourteen',
      'fifteen',
      'sixteen',
      'seventeen',
      'eighteen',
      'nineteen',
      'twenty',
    ];
    const said = /`docs\/openapi\.json` describes the (\w+) operations/.exec(read('docs/development.md'))?.[1];
    expect(said).toBe(words[count] ?? String(count));
  });

  it("the README's screenshot caption names what scripts/portal-screenshot.mjs sends: test events, by type", () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const caption = /!\[([^\]]*)\]\(docs\/portal-endpoint\.png\)/.exec(readme)?.[1] ?? '';
    const script = readFileSync(join(root, 'scripts/portal-screenshot.mjs'), 'utf8');
    const sent = [...script.matchAll(/api\('POST', '([^']+)', \{([^}]*)\}\)/g)].filter(
      ([, path]) => path !== 'webhook',
    );
    // Only test events, and no other event: the caption says so, with the count and every type.
    expect(sent.map(([, path]) => path)).toEqual(['webhook/test', 'webhook/test']);
    const types = sent.map(([, , body]) => /type: '([^']+)'/.exec(body as string)?.[1] ?? 'webhook.test');
    expect(caption).toContain('two test events');
    for (const type of types) expect(caption).toContain(type);
  });

  it('no document calls the Cron Trigger hourly: it runs every minute, in every environment', () => {
    for (const env of [undefined, 'staging', 'production']) {
      expect(
        unstable_readConfig({ config: join(root, 'wrangler.toml'), env }, { hideWarnings: true }).triggers.crons,
      ).toEqual(['* * * * *']);
    }
    // A sentence that names the Cron and says it runs each hour (other hourly things, such as the
    // stats' hourly counters, may be called so).
    const hourlyCron = /(cron[^.]*\b(hourly|every hour|once an hour))|((hourly|every hour|once an hour)[^.]*cron)/i;
    for (const file of docs) expect(read(file).replace(/\s+/g, ' '), file).not.toMatch(hourlyCron);
    expect('The Cron Trigger runs hourly.').toMatch(hourlyCron);
  });

  it('configuration.md says that a change of .dev.vars needs a restart', () => {
    const text = read('docs/configuration.md').replace(/\s+/g, ' ');
    expect(text).toContain('after changing `.dev.vars`, stop `npm start` (Ctrl-C) and start it again');
  });
});
