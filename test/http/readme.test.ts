// The README's walkthrough, run as written: every command of its first ```sh block under
// "## Walkthrough", against the `wrangler dev` of this project (its URL in place of
// localhost:8787), each reply checked against the `# HTTP/...`, `# Header: value` and `# {...}`
// lines shown under it (`…` stands for text that varies). Ids the server assigns replace the ones
// the README shows.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, inject, it } from 'vitest';

interface Step {
  command: string;
  status?: string;
  headers: [string, string][];
  body?: string;
}

function walkthrough(): { tokenCommand: string; steps: Step[] } {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const section = readme.slice(readme.indexOf('## Walkthrough'));
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

describe('the README walkthrough', () => {
  it('answers every curl call as the README shows', () => {
    const { tokenCommand, steps } = walkthrough();
    expect(steps.length).toBeGreaterThanOrEqual(8);
    const root = new URL('../..', import.meta.url).pathname;
    const env = {
      ...process.env,
      JWT_SECRET: inject('secret'),
      JWT_APP_CLAIM: 'sub',
      JWT_ISSUER: '',
      JWT_AUDIENCE: '',
    };
    const token = execFileSync('bash', ['-c', `${tokenCommand} && printf %s "$TOKEN"`], { cwd: root, env }).toString();
    expect(token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);

    const ids = new Map<string, string>(); // id shown in the README -> id the server assigned
    const withIds = (text: string) =>
      text.replace(/(webhook_id(?:=|": ?))(\d+)/g, (_, prefix, id) => `${prefix}${ids.get(id) ?? id}`);
    for (const step of steps) {
      const command = withIds(step.command).replaceAll('http://localhost:8787', inject('baseUrl'));
      const output = execFileSync('bash', ['-c', command], { cwd: root, env: { ...env, TOKEN: token } }).toString();
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
});
