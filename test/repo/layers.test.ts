// The layers of src/ point one way: a file imports only from its own layer or those below it, so
// no two folders import each other. Lowest first:
//   core/       errors, the logger, settings, int64 ids and cursors, batching: no bindings, no Hono
//   platform/   Cloudflare's products: D1, the queues
//   http/       the envelope, request input, the request's D1 session, limits, the route table
//   auth/       the bearer token
//   webhooks/   the webhook operations, their store, URL rules and signing secrets
//   events/     events in: publishing, the events queue, the fan-out
//   deliveries/ from an event to the receivers: the consumer, attempts, the log, recovery
//   src/*.ts    the app, the Cron Trigger, the Worker's entry point
// Inside a folder, `store/` (SQL only) never imports the handlers beside it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../src');
const LAYERS = ['core', 'platform', 'http', 'auth', 'webhooks', 'events', 'deliveries', '.'];

/** Source files by their path relative to src/ (`webhooks/store/rows.ts`), with their text. */
type Tree = Map<string, string>;

function read(dir: string, tree: Tree = new Map()): Tree {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) read(path, tree);
    else if (path.endsWith('.ts') || path.endsWith('.json')) tree.set(relative(SRC, path), readFileSync(path, 'utf8'));
  }
  return tree;
}

/** The folder of src/ a file belongs to ('.' for the top level). */
const folderOf = (file: string) => (file.includes('/') ? (file.split('/')[0] as string) : '.');

/** Every import of a file: the module named, and the file it names for a relative one. */
function importsOf(file: string, text: string): { module: string; target: string | null }[] {
  return [...text.matchAll(/^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm)].map(([, module]) => ({
    module: module as string,
    target: (module as string).startsWith('.')
      ? `${relative(SRC, resolve(SRC, dirname(file), module as string))}${(module as string).endsWith('.json') ? '' : '.ts'}`
      : null,
  }));
}

/** What breaks the layering, one line per import: upward, unresolved, Hono or bindings below http. */
function violations(tree: Tree): string[] {
  const found: string[] = [];
  for (const [file, text] of tree) {
    const folder = folderOf(file);
    const layer = LAYERS.indexOf(folder);
    if (layer === -1) found.push(`${file}: folder ${folder} is not a layer`);
    for (const { module, target } of importsOf(file, text)) {
      if ((folder === 'core' || folder === 'platform') && (module === 'hono' || module.startsWith('hono/'))) {
        found.push(`${file} -> ${module}: no Hono below http/`);
      }
      if (target === null) continue;
      if (!tree.has(target)) found.push(`${file} -> ${module}: no such file`);
      else if (LAYERS.indexOf(folderOf(target)) > layer) found.push(`${file} -> ${target}: up a layer`);
      const [, sub] = file.split('/');
      const [tFolder, tSub] = target.split('/');
      if (sub === 'store' && tFolder === folder && tSub !== 'store')
        found.push(`${file} -> ${target}: store to handler`);
    }
    if (folder === 'core' && /CloudflareBindings/.test(text)) found.push(`${file}: bindings in core/`);
  }
  return found;
}

describe('the layers of src/', () => {
  it('has no import up a layer, no Hono below http/, no bindings in core/, no store importing a handler', () => {
    expect(violations(read(SRC))).toEqual([]);
  });

  it('is a check that fails: each kind of violation is found', () => {
    const tree: Tree = new Map([
      ['core/a.ts', "import { x } from '../http/b';\nimport { Hono } from 'hono';\nlet e: CloudflareBindings;"],
      ['http/b.ts', "import { y } from './missing';"],
      ['webhooks/store/c.ts', "import { z } from '../d';"],
      ['webhooks/d.ts', ''],
      ['extra/e.ts', ''],
    ]);
    expect(violations(tree)).toEqual([
      'core/a.ts -> http/b.ts: up a layer',
      'core/a.ts -> hono: no Hono below http/',
      'core/a.ts: bindings in core/',
      'http/b.ts -> ./missing: no such file',
      'webhooks/store/c.ts -> webhooks/d.ts: store to handler',
      'extra/e.ts: folder extra is not a layer',
    ]);
  });
});
