// The README's walkthrough, run as written: every command of its first ```sh block under
// "## Walkthrough", against the `wrangler dev` of this project (its URL in place of
// localhost:8787), each reply checked against the `# HTTP/...`, `# Header: value` and `# {...}`
// lines shown under it (`…` stands for text that varies). Ids the server assigns replace the ones
// the README shows. Then the blocks of "### Deliveries", each pasted whole, in order, into one
// shell (they share its variables): the receiver started in the background, an event published,
// the receiver's output and every reply checked against what the README shows. And the block of
// "### Destinations", pasted whole: the stand-in verifies the test event it sends to an SQS webhook.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { README_RECEIVER_PORT } from './wrangler-dev';

const readme = () => readFileSync(new URL('../../README.md', import.meta.url), 'utf8');

interface Step {
  command: string;
  status?: string;
  headers: [string, string][];
  body?: string;
}

function walkthrough(): { tokenCommand: string; steps: Step[] } {
  const text = readme();
  const section = text.slice(text.indexOf('## Walkthrough'));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  if (block === undefined) throw new Error('README: no sh block under ## Walkthrough');
  const lines = block.split('\n');
  let tokenCommand = '';
  const steps: Step[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] as string;
    if (line.startsWith('TOKEN=')) tokenCommand = line.replace(/\s+#.*$/, '');
    if (!line.startsWith('curl ')) continue;
    let command = line;
    while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${(lines[++i] as string).trim()}`;
    const step: Step = { command, headers: [] };
    while (lines[i + 1]?.startsWith('# ')) {
      const shown = (lines[++i] as string).slice(2);
      if (shown.startsWith('HTTP/')) step.status = shown;
      else if (shown.startsWith('{')) step.body = shown;
      else {
        const colon = shown.indexOf(': ');
        step.headers.push([shown.slice(0, colon), shown.slice(colon + 2)]);
      }
    }
    steps.push(step);
  }
  return { tokenCommand, steps };
}

/** Asserts that `actual` holds the pieces of `shown` between its `…`s, in order. */
function expectShown(actual: string, shown: string) {
  let from = 0;
  for (const piece of shown.split('…')) {
    const at = actual.indexOf(piece, from);
    expect(at, `"${piece}" in ${actual}`).toBeGreaterThanOrEqual(0);
    from = at + piece.length;
  }
}

/** Whether `line` is `shown` whole, each `…` standing for any text. */
const isShownLine = (line: string, shown: string) =>
  new RegExp(
    `^${shown
      .split('…')
      .map((piece) => piece.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&'))
      .join('.*')}$`,
  ).test(line);

const root = new URL('../..', import.meta.url).pathname;
/** What the README's commands need: `npm run token` signs with the secret of the Worker under test. */
const env = () => ({
  ...process.env,
  JWT_SECRET: inject('secret'),
  JWT_APP_CLAIM: 'sub',
  JWT_ISSUER: '',
  JWT_AUDIENCE: '',
});
/** Runs shell text in bash from the repository's root; its standard output. */
const bash = (script: string, extra: Record<string, string> = {}) =>
  execFileSync('bash', ['-c', script], { cwd: root, env: { ...env(), ...extra } }).toString();

/**
 * The sh blocks of "### Deliveries", in order, and the lines of the output block after the first
 * (what `cat receiver.log` shows).
 */
function deliveriesSection() {
  const text = readme();
  const heading = '### Deliveries: from an event to your receiver';
  const at = text.indexOf(heading);
  if (at === -1) throw new Error(`README: no "${heading}"`);
  // Up to where the README says that the receiver is no longer needed.
  const end = text.indexOf('When you are done: `kill $RECEIVER`', at);
  const section = text.slice(at, end === -1 ? undefined : end);
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1] as string);
  const first = section.indexOf('```sh\n');
  const afterFirst = section.slice(section.indexOf('\n```\n', first) + 5);
  const output = /^```\n([\s\S]*?)^```/m.exec(afterFirst)?.[1];
  if (blocks.length === 0 || output === undefined) throw new Error(`README: no sh and output blocks under ${heading}`);
  return { blocks, shown: output.split('\n').filter((l) => l.trim() !== '') };
}

/** The port of the README's destination stand-in (`npm run destinations`), where wrangler.toml sends every type. */
const README_STANDIN_PORT = 8791;

/** The sh block of "### Destinations" and the lines it shows under its commands (`# ...`). */
function destinationsSection() {
  const text = readme();
  const heading = '### Destinations: a queue instead of an endpoint';
  const at = text.indexOf(heading);
  if (at === -1) throw new Error(`README: no "${heading}"`);
  const block = /```sh\n([\s\S]*?)```/.exec(text.slice(at))?.[1];
  if (block === undefined) throw new Error(`README: no sh block under ${heading}`);
  return {
    block,
    shown: block
      .split('\n')
      .filter((l) => l.startsWith('# '))
      .map((l) => l.slice(2).trim()),
  };
}

/** What a block shows under its commands: its `# HTTP/...`, `# {...}`, `# VERIFIED ...` and `# --...:` lines. */
const shownIn = (block: string) =>
  block
    .split('\n')
    .filter((l) => /^# (HTTP\/|\{|VERIFIED |--)/.test(l))
    .map((l) => l.slice(2));

/** Whether something listens on 127.0.0.1:`port` (so a receiver could not). */
const portBusy = (port: number) =>
  new Promise<boolean>((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(true));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
  });

let receiver: ChildProcess | undefined;
/** Stops the README's receiver: its whole process group (bash, npm, node). */
async function stopReceiver() {
  const child = receiver;
  if (child?.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-(child.pid as number), s);
    } catch {
      // The group is gone already.
    }
  };
  signal('SIGTERM');
  await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 3000))]);
  signal('SIGKILL');
}
afterAll(stopReceiver);

describe('the README walkthrough', () => {
  it('answers every curl call as the README shows', () => {
    const { tokenCommand, steps } = walkthrough();
    expect(steps.length).toBeGreaterThanOrEqual(9);
    // A PATCH that adds a content filter, shown with its reply: the filter as sent.
    const patch = steps.find((s) => s.command.startsWith('curl -i -X PATCH '));
    const sent = JSON.parse(/-d '(\{.*\})'$/.exec(patch?.command ?? '')?.[1] ?? '{}');
    expect(sent.filter, patch?.command).toBeTypeOf('object');
    expect(patch?.status).toBe('HTTP/1.1 200 OK');
    expect(JSON.parse((patch?.body ?? '{}').replaceAll('"…"', 'null')).value.filter).toEqual(sent.filter);
    // And stored: the read after it shows the filter (checked against the real reply below).
    const read = steps[steps.indexOf(patch as Step) + 1];
    expect(read?.command).toMatch(/^curl -i "[^"]*\?webhook_id=6"/);
    expect(read?.body).toContain(`"filter":${JSON.stringify(sent.filter)}`);
    const token = bash(`${tokenCommand} && printf %s "$TOKEN"`);
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const ids = new Map<string, string>(); // id shown in the README -> id the server assigned
    const withIds = (text: string) =>
      text.replace(/(webhook_id(?:=|": ?))(\d+)/g, (_, prefix, id) => `${prefix}${ids.get(id) ?? id}`);
    for (const step of steps) {
      const command = withIds(step.command).replaceAll('http://localhost:8787', inject('baseUrl'));
      const output = bash(command, { TOKEN: token });
      const [head = '', body = ''] = output.split(/\r?\n\r?\n/, 2);
      const [statusLine = '', ...headerLines] = head.split(/\r?\n/);
      const headers = new Map(
        headerLines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      // A registration's id: the README's becomes the server's from here on.
      const location = headers.get('location');
      const shownLocation = step.headers.find(([name]) => name.toLowerCase() === 'location')?.[1];
      if (location !== undefined && shownLocation !== undefined) {
        ids.set(
          /webhook_id=(\d+)/.exec(shownLocation)?.[1] as string,
          /webhook_id=(\d+)/.exec(location)?.[1] as string,
        );
      }
      expect(statusLine.trim(), command).toBe(step.status);
      for (const [name, value] of step.headers) expect(headers.get(name.toLowerCase()), name).toBe(withIds(value));
      if (step.body !== undefined) expectShown(body.trim(), withIds(step.body));
      if (step === patch) expect(JSON.parse(body).value.filter).toEqual(sent.filter);
    }
  });

  it('runs the blocks of "### Deliveries" pasted whole into one shell, each showing what the README shows', async () => {
    const { blocks, shown } = deliveriesSection();
    expect(blocks).toHaveLength(5);
    // Each start of the receiver empties receiver.log first, and nothing is sent before this
    // receiver says it listens: `... > receiver.log &` truncates the file in the background, so a
    // wait that looked first would read the stopped receiver's "Receiver listening" and send to
    // nothing (its delivery then ends in "connection", not in the status the block asked for).
    const wait =
      "until grep -q 'Receiver listening' receiver.log || ! kill -0 $RECEIVER 2>/dev/null; do sleep 0.2; done";
    const starts = blocks.flatMap((block) => {
      const lines = block.split('\n').map((l) => l.trim());
      return lines.flatMap((line, i) =>
        /npm run receiver\b.*> receiver\.log 2>&1 &$/.test(line)
          ? [{ line, before: lines[i - 1], next: lines.slice(i + 1).find((l) => /^(until|curl) /.test(l)) }]
          : [],
      );
    });
    expect(starts).toHaveLength(5);
    for (const start of starts) expect(start).toEqual({ line: start.line, before: ': > receiver.log', next: wait });
    const base = inject('baseUrl');
    const [first = ''] = blocks;
    // The receiver: in the background, its secret from the environment (npm prints a command
    // line, secret included), its output in receiver.log, on the port the local configuration allows.
    expect(first).toContain('WEBHOOK_SECRET="$SECRET" npm run receiver > receiver.log 2>&1 &');
    expect(first).not.toContain('--secret');
    expect(first).toContain(`http://127.0.0.1:${README_RECEIVER_PORT}/`);
    if (await portBusy(README_RECEIVER_PORT)) {
      throw new Error(
        `port ${README_RECEIVER_PORT} is busy: the README's receiver (npm run receiver) must listen there. Stop what listens on 127.0.0.1:${README_RECEIVER_PORT} (another receiver?) and run the tests again.`,
      );
    }
    // One shell, as one terminal: each block whole, a marker after each; the receiver stopped at the end.
    const script = `${blocks.map((b, i) => `${b}\necho "=== block ${i + 1} ==="`).join('\n')}\nkill $RECEIVER\necho "VARS $WEBHOOK $TOKEN $MINT"`;
    const started = Date.now();
    receiver = spawn('bash', ['-c', script.replaceAll('http://localhost:8787', base)], {
      cwd: root,
      env: { ...env(), RECEIVER: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let output = '';
    receiver.stdout?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    receiver.stderr?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const code = await new Promise((resolve) => receiver?.once('exit', resolve));
    expect(code, output).toBe(0);
    // Nothing stalls: the sleeps, and the slow receiver's 17 s, and no more than a little beyond.
    expect(Date.now() - started).toBeLessThan(90_000);
    const parts = output.split(/=== block \d ===/);
    expect(parts, output).toHaveLength(6);
    blocks.forEach((block, i) => {
      const lines = shownIn(block);
      if (lines.length > 0) expectShown(parts[i] as string, lines.join('…'));
    });
    // The first block's `cat receiver.log`: every line the README shows, and no refusal.
    const printed = (parts[0] as string).split('\n').map((l) => l.trim());
    for (const line of shown)
      expect(
        printed.some((l) => isShownLine(l, line.trim())),
        `${line}\n${parts[0]}`,
      ).toBe(true);
    expect(output).not.toContain('REFUSED');
    // `kill $RECEIVER` (the npm that started it) stopped the receiver itself: the port is free again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await portBusy(README_RECEIVER_PORT)).toBe(false);
    // "Publishing the same `id` (`$MINT`) again answers the same `event_id` and delivers nothing twice."
    const [, webhook = '', token = '', mint = ''] = /^VARS (\d+) (\S+) (\S+)$/m.exec(output) ?? [];
    const publish = first.slice(
      first.indexOf('curl -i -X POST http://localhost:8787/v1.0/platform'),
      first.indexOf('# HTTP/1.1 202'),
    );
    const eventIds = [...(parts[0] as string).matchAll(/"value":\{"event_id":"(evt_[0-9a-f]+)"\}/g)].map((m) => m[1]);
    expect(eventIds).toHaveLength(1);
    expect(mint).toMatch(/^mint-\d+$/);
    const again = bash(
      `PLATFORM=$(npm run -s token -- platform-service --scope events:publish)\n${publish}`.replaceAll(
        'http://localhost:8787',
        base,
      ),
      { MINT: mint },
    );
    expect(again).toContain(`{"event_id":"${eventIds[0]}"}`);
    const log = JSON.parse(
      bash(
        `curl -s "${base}/v1.0/app/nft/webhook/delivery?webhook_id=${webhook}&limit=100" -H "Authorization: Bearer ${token}"`,
      ),
    );
    expect(log.value.deliveries.filter((d: { type: string }) => d.type === 'NEW_NFT')).toHaveLength(1);
    // The third: after each way of failing, the newest delivery is what the README says it is.
    const newest = Object.fromEntries(
      [...(parts[2] as string).matchAll(/^(--status \d+|--delay \d+):\n(\{.*\})$/gm)].map((m) => [
        m[1],
        JSON.parse(m[2] as string).value.deliveries[0],
      ]),
    );
    expect(Object.keys(newest), parts[2]).toEqual(['--status 500', '--delay 20', '--status 410']);
    expect(newest['--status 500'], parts[2]).toMatchObject({
      type: 'webhook.test',
      last_status: 500,
      last_error: null,
    });
    expect(newest['--delay 20'], parts[2]).toMatchObject({
      type: 'webhook.test',
      last_status: null,
      last_error: 'timeout',
    });
    expect(newest['--status 410'], parts[2]).toMatchObject({
      type: 'webhook.test',
      status: 'failed',
      last_status: 410,
    });
    // The fourth block enabled the webhook the 410 disabled, and recovered its failed deliveries.
    expect(parts[3]).toMatch(/HTTP\/1\.1 200 OK[\s\S]*"value":\{"deliveries":[1-9]/);
    // The last: a 410 again, and the second webhook heard of it, about the first, signed with its own secret.
    expect(parts[4]).toContain(
      `"data":{"webhook_id":${webhook},"url":"http://127.0.0.1:${README_RECEIVER_PORT}/nft-events/`,
    );
    expect(parts[4]).toMatch(
      /-ops webhook-id=evt_[0-9a-f]+ signatures: #1 secret#2\n\s+\{"type":"endpoint\.disabled"[^\n]*"reason":"gone"\}\}/,
    );
  }, 150_000);

  it('runs the block of "### Destinations" pasted whole: the stand-in prints the test event to the SQS webhook, verified', async () => {
    const { block, shown } = destinationsSection();
    // What the stand-in prints of one SQS message: its queue and verification, the SigV4 credential, the body.
    expect(shown).toHaveLength(3);
    expect(shown[0]).toMatch(/^SQS https:\/\/sqs\..*: verified with whsec_…$/);
    // The stand-in listens where the README says, and where the local configuration sends SQS.
    expect(readme()).toContain(`a stand-in of the four APIs on \`http://127.0.0.1:${README_STANDIN_PORT}\``);
    expect(readFileSync(new URL('../../wrangler.toml', import.meta.url), 'utf8')).toContain(
      `aws_sqs=http://127.0.0.1:${README_STANDIN_PORT}`,
    );
    if (await portBusy(README_STANDIN_PORT)) {
      throw new Error(
        `port ${README_STANDIN_PORT} is busy: the README's stand-in (npm run destinations) must listen there. Stop what listens on 127.0.0.1:${README_STANDIN_PORT} and run the tests again.`,
      );
    }
    const { tokenCommand } = walkthrough();
    const base = inject('baseUrl');
    // Run twice, as the README says it can be: a new queue each time, the first stand-in stopped by the second run.
    const script = `${tokenCommand}\n${block}\necho "VARS $SQS_WEBHOOK $TOKEN"\n${block}\necho "VARS $SQS_WEBHOOK $TOKEN"\nkill $STANDIN`;
    const output = bash(script.replaceAll('http://localhost:8787', base), { STANDIN: '' });
    const runs = output.split(/^VARS .*$/m).slice(0, 2);
    const vars = [...output.matchAll(/^VARS (\d+) (\S+)$/gm)].map((m) => [m[1] as string, m[2] as string]);
    expect(vars, output).toHaveLength(2);
    expect(vars[0]?.[0]).not.toBe(vars[1]?.[0]);
    for (const run of runs) {
      const printed = run.split('\n').map((l) => l.trim());
      for (const line of shown)
        expect(
          printed.some((l) => isShownLine(l, line)),
          `${line}\n${run}`,
        ).toBe(true);
    }
    // Stored: each webhook's delivery log has the test event, delivered (the stand-in's 200).
    for (const [webhook, token] of vars) {
      const log = JSON.parse(
        bash(
          `curl -s "${base}/v1.0/app/nft/webhook/delivery?webhook_id=${webhook}" -H "Authorization: Bearer ${token}"`,
        ),
      );
      expect(log.value.deliveries, JSON.stringify(log)).toHaveLength(1);
      expect(log.value.deliveries[0]).toMatchObject({ type: 'webhook.test', status: 'succeeded', last_status: 200 });
    }
    // `kill $STANDIN` (the npm that started it) stopped the stand-in itself: the port is free again.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await portBusy(README_STANDIN_PORT)).toBe(false);
  }, 60_000);
});
