// What the docs say about the code, checked against the code: the `op` values of the log line,
// the number of operations in the OpenAPI document, how often the Cron Trigger runs and how to
// run it locally, and the local rotation of the key ring, run as configuration.md walks it.
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';
import { apiOf, d1Of, ownFolder } from './api';
import { until } from './receiver';
import { ownWorker } from './wrangler-dev';

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

  it('every local Cron Trigger call the docs show is the one `npm start` makes (wrangler dev --test-scheduled)', () => {
    const path = /:\$\{port\}(\/[\w-]+)\?cron=/.exec(read('scripts/dev.mjs'))?.[1];
    expect(path).toBe('/__scheduled');
    const calls = docs.flatMap((file) =>
      [...read(file).matchAll(/curl[^\n`]*http:\/\/localhost:8787(\/[^\s"`?]*scheduled[^\s"`?]*)/g)].map((m) => ({
        file,
        path: m[1],
      })),
    );
    for (const call of calls) expect(call, call.file).toEqual({ file: call.file, path });
    // The Cron Trigger's table row and the local rotation.
    expect(calls.filter((c) => c.file === 'docs/configuration.md').length).toBeGreaterThanOrEqual(2);
  });

  it("quotes the key ring's re-sealing line as src/webhooks/reseal.ts logs it", () => {
    const code = /msg: `(cron: every stored signing secret[^`]*)`/.exec(read('src/webhooks/reseal.ts'))?.[1] ?? '';
    // The key's id is the one placeholder; the docs write it <id> or <new id>.
    const parts = code.split(/\$\{[^}]+\}/);
    expect(parts, code).toHaveLength(2);
    const [before, after] = parts as [string, string];
    for (const file of ['docs/configuration.md', 'docs/deploying.md']) {
      // As the docs wrap it: in comments (`#`) and across lines.
      const text = read(file).replace(/\n\s*#?\s*/g, ' ');
      expect(text, file).toMatch(new RegExp(`${literal(before)}<[\\w ]+>${literal(after)}`));
    }
  });
});

const literal = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

describe("configuration.md's local rotation of the key ring, run step by step", () => {
  const own = ownFolder('nft-webhook-rotation-');

  it('re-seals every stored secret with the new key at the one Cron run it calls, which logs the line it shows; the old key then goes', async () => {
    const text = read('docs/configuration.md');
    const block = /A rotation,\s+locally, step by step[\s\S]*?```sh\n([\s\S]*?)```/.exec(text)?.[1] ?? '';
    const lines = block.split('\n');
    const commands = lines.filter((l) => l.trim() !== '' && !l.startsWith('#'));
    const shown = lines.filter((l) => l.startsWith('# {')).map((l) => l.slice(2));
    expect(commands.map((c) => c.split(' ')[0])).toEqual(['echo', 'curl', 'sed']);
    expect(shown).toHaveLength(1);
    const [addKey = '', runCron = '', removeKey = ''] = commands;

    // The Worker as npm start runs it: its settings file (.dev.vars) holds WEBHOOK_SECRET_KEY alone.
    const worker = ownWorker(own.folder, [], {});
    const vars = join(own.folder, 'own.vars');
    const inFolder = (command: string, baseUrl = '') =>
      execFileSync(
        'bash',
        ['-c', command.replaceAll('.dev.vars', 'own.vars').replaceAll('http://localhost:8787', baseUrl)],
        { cwd: own.folder, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
      );
    const restart = async () => {
      await own.dev?.stop();
      own.dev = await worker.start();
      return apiOf(own.dev.baseUrl, worker.secret);
    };
    let api = await restart();
    const app = 'rotation-app';
    const before = await api.register(app, 'https://hooks.example.com/rotation-before');
    const d1 = d1Of(worker.persistTo);
    const sealedWith = async () =>
      (await d1("SELECT secret FROM webhooks WHERE app_id = 'rotation-app' ORDER BY webhook_id"))[0]?.map((r) =>
        /^v2\.([\w-]+)\.|^(v1)\./.exec(String(r.secret))?.slice(1).find(Boolean),
      );
    expect(await sealedWith()).toEqual(['v1']); // the key `default`

    // 1 and 2: the new key first, and a restart; secrets stored from now on are sealed with it.
    inFolder(addKey);
    expect(readFileSync(vars, 'utf8')).toMatch(/^WEBHOOK_SECRET_KEYS=local-2:\S{44}$/m);
    api = await restart();
    const after = await api.register(app, 'https://hooks.example.com/rotation-after');
    expect(await sealedWith()).toEqual(['v1', 'local-2']);

    // 3 and 4: one Cron run re-seals the rest, and says so with the line shown.
    expect(inFolder(runCron, own.dev?.baseUrl)).toBe('Ran scheduled event');
    const log = join(own.folder, 'wrangler-dev-2.log');
    await until(
      () => `the line ${shown[0]} in:\n${readFileSync(log, 'utf8')}`,
      () =>
        readFileSync(log, 'utf8')
          .split('\n')
          .includes(shown[0] as string),
    );
    expect(await sealedWith()).toEqual(['local-2', 'local-2']);

    // 5: the old key removed; every secret still reads, as it was.
    inFolder(removeKey);
    expect(readFileSync(vars, 'utf8')).not.toMatch(/^WEBHOOK_SECRET_KEY=/m);
    expect(readFileSync(vars, 'utf8')).toMatch(/^WEBHOOK_SECRET_KEYS=local-2:/m);
    api = await restart();
    for (const { id, secret } of [before, after]) {
      const res = await api.call('GET', `/v1.0/app/nft/webhook/secret?webhook_id=${id}`, app);
      expect(res.status, res.text).toBe(200);
      expect(JSON.parse(res.text)).toEqual({ return: 0, message: 'success', value: { secret } });
    }
  }, 300_000);
});
