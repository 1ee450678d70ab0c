// The README's walkthrough, run as written: every command of its first ```sh block under
// "## Walkthrough", against the `wrangler dev` of this project (its URL in place of
// localhost:8787), each reply checked against the `# HTTP/...`, `# Header: value` and `# {...}`
// lines shown under it (`…` stands for text that varies). Ids the server assigns replace the ones
// the README shows. Then its "### Deliveries" block: a webhook registered at the README's receiver,
// `npm run receiver` started on port 8790 with its secret, an event published, and the receiver's
// output checked against the lines the README shows.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { until } from './receiver';
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

/** The sh block of "### Deliveries" in logical lines (continuations joined), and the output block after it. */
function deliveriesSection() {
  const text = readme();
  const heading = '### Deliveries: from an event to your receiver';
  const at = text.indexOf(heading);
  if (at === -1) throw new Error(`README: no "${heading}"`);
  const section = text.slice(at);
  const sh = /```sh\n([\s\S]*?)```/.exec(section);
  if (sh === null) throw new Error(`README: no sh block under ${heading}`);
  const output = /^```\n([\s\S]*?)^```/m.exec(section.slice(sh.index + sh[0].length))?.[1];
  if (output === undefined) throw new Error(`README: no output block after the sh block of ${heading}`);
  const lines: string[] = [];
  for (const line of (sh[1] as string).split('\n')) {
    const last = lines.at(-1);
    if (last?.endsWith('\\')) lines[lines.length - 1] = `${last}\n${line}`;
    else if (line.trim() !== '') lines.push(line);
  }
  return { lines, shown: output.split('\n').filter((l) => l.trim() !== '') };
}

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
    expect(steps.length).toBeGreaterThanOrEqual(8);
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
    }
  });

  it('delivers an event to `npm run receiver` as "### Deliveries" shows', async () => {
    const { lines, shown } = deliveriesSection();
    const base = inject('baseUrl');
    const local = (command: string) => command.replaceAll('http://localhost:8787', base);
    const at = lines.findIndex((l) => /^(WEBHOOK_SECRET="\$SECRET" )?npm run receiver/.test(l));
    expect(at, 'the `npm run receiver` line').toBeGreaterThan(0);
    const before = lines.slice(0, at);
    const receiverLine = lines[at] as string;
    // After the receiver: steps, each its commands and the reply lines shown under them
    // (`# HTTP/...`, `# {...}`); other `# ` lines are comments.
    const steps: { commands: string[]; shown: string[] }[] = [];
    for (const line of lines.slice(at + 1)) {
      if (line.startsWith('# HTTP/') || line.startsWith('# {'))
        (steps.at(-1) as { shown: string[] }).shown.push(line.slice(2));
      else if (line.startsWith('# ')) continue;
      else if (steps.length === 0 || (steps.at(-1) as { shown: string[] }).shown.length > 0)
        steps.push({ commands: [line], shown: [] });
      else steps.at(-1)?.commands.push(line);
    }
    const publishStep = steps.find((s) => s.commands.some((c) => c.includes('/v1.0/platform/nft/event')));
    expect(publishStep, 'a publish step').toBeDefined();
    expect(steps.every((s) => s.shown.length === 2)).toBe(true);
    expect(before.some((l) => l.startsWith('SECRET=$('))).toBe(true);
    // The secret from the environment (npm prints a command line, secret included).
    expect(receiverLine).toMatch(/^WEBHOOK_SECRET="\$SECRET" npm run receiver/);
    expect(receiverLine).not.toContain('--secret');
    const receiverPort = Number(/--port (\d+)/.exec(receiverLine)?.[1] ?? README_RECEIVER_PORT);
    expect(before.join('\n')).toContain(`http://127.0.0.1:${receiverPort}/`);

    // Register the webhook (TOKEN=..., REPLY=$(curl ...), WEBHOOK=..., SECRET=...), as written.
    const [token = '', webhook = '', secret = ''] = bash(
      `${local(before.join('\n'))}\nprintf '%s\\n%s\\n%s' "$TOKEN" "$WEBHOOK" "$SECRET"`,
    ).split('\n');
    expect(secret, 'SECRET: value.secret of the registration reply').toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(webhook, 'WEBHOOK: value.webhook_id of the registration reply').toMatch(/^\d+$/);
    const vars = { TOKEN: token, WEBHOOK: webhook, SECRET: secret };
    // Run again, the block registers another webhook (a new URL) and gets its secret.
    const [, again = '', againSecret = ''] = bash(
      `${local(before.join('\n'))}\nprintf '%s\\n%s\\n%s' "$TOKEN" "$WEBHOOK" "$SECRET"`,
    ).split('\n');
    expect(again).toMatch(/^\d+$/);
    expect(again).not.toBe(webhook);
    expect(againSecret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    // (Deleted, so that the receiver, holding the first secret, is sent nothing signed with another.)
    expect(
      bash(
        `curl -s -X DELETE "${base}/v1.0/app/nft/webhook?webhook_id=${again}" -H "Authorization: Bearer $TOKEN"`,
        vars,
      ),
    ).toBe('{"return":0,"message":"success"}');

    // The receiver, in its own process group (a third terminal).
    if (await portBusy(receiverPort)) {
      throw new Error(
        `port ${receiverPort} is busy: the README's receiver (npm run receiver) must listen there. Stop what listens on 127.0.0.1:${receiverPort} (another receiver?) and run the tests again.`,
      );
    }
    let output = '';
    receiver = spawn('bash', ['-c', receiverLine], {
      cwd: root,
      env: { ...env(), ...vars },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    receiver.stdout?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    receiver.stderr?.on('data', (c: Buffer) => {
      output += c.toString();
    });
    const running = () => {
      if (receiver?.exitCode !== null) throw new Error(`npm run receiver exited (${receiver?.exitCode}):\n${output}`);
      return true;
    };
    await until(
      () => `the receiver to listen:\n${output}`,
      () => running() && output.includes(`Receiver listening on http://127.0.0.1:${receiverPort}`),
    );

    // Each step as written, its reply as shown under it.
    const run = (step: { commands: string[]; shown: string[] }) => {
      const reply = bash(local(step.commands.join('\n')), vars);
      const [head = '', body = ''] = reply.split(/\r?\n\r?\n/, 2);
      expect(head.split(/\r?\n/)[0]?.trim(), step.commands.join('\n')).toBe(step.shown[0]);
      expectShown(body.trim(), step.shown[1] as string);
      return JSON.parse(body).value;
    };
    const printed = () => output.split('\n').map((l) => l.trim());
    const matches = () => shown.every((s) => printed().some((l) => isShownLine(l, s.trim())));
    let eventId = '';
    for (const step of steps) {
      // The delivery log is read once the receiver has printed what the README shows.
      if (step.commands.some((c) => c.includes('/delivery?'))) {
        await until(
          () => `the receiver to print\n${shown.join('\n')}\ngot:\n${output}`,
          () => running() && matches(),
        );
      }
      const value = run(step);
      if (step === publishStep) eventId = value.event_id;
    }
    expect(eventId).toMatch(/^evt_[0-9a-f]{32}$/);
    expect(output).toMatch(new RegExp(`^VERIFIED POST /nft-events/[0-9a-f]{8} webhook-id=${eventId} `, 'm'));
    // The receiver's first line (after npm's own) says where its secret came from.
    expect(output.split('\n').find((l) => l.trim() !== '' && !/^(> |npm )/.test(l))).toBe(
      'Secrets from WEBHOOK_SECRET: secret#1.',
    );
    expect(output).not.toContain('REFUSED');

    // "Publishing `mint-1` again answers the same `event_id` and delivers nothing twice."
    const verified = printed().filter((l) => l.startsWith('VERIFIED')).length;
    expect(run(publishStep as { commands: string[]; shown: string[] }).event_id).toBe(eventId);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect(printed().filter((l) => l.startsWith('VERIFIED'))).toHaveLength(verified);
    await stopReceiver();
  });
});
