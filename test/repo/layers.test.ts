// The layers of src/ point one way: a file imports only from its own layer or those below it, so
// no two folders import each other. Lowest first:
//   core/       errors, the logger, settings, int64 ids and cursors, batching: no bindings, no Hono
//   platform/   Cloudflare's products: D1, calls to Durable Objects, their schema versions
//   http/       the envelope, request input, the request's D1 session, limits, the route table
//   auth/       the bearer token
//   webhooks/   the webhook operations, their store, URL rules and signing secrets
//   events/     events in: publishing, the events queue, the fan-out, the Application object
//   filters/    content filters' value sets and trials, at the Application object
//   deliveries/ from an event to the receivers: the Endpoint object, attempts, the log, recovery
//   applications/ the platform's operations on an application: its retention, its erasure
//   portal/     serving the application portal's static files with their security headers
//   src/*.ts    the app, the Cron Trigger, the Worker's entry point
// Inside a folder, `store/` (SQL only) never imports the handlers beside it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = resolve(__dirname, '../../src');
const LAYERS = [
  'core',
  'platform',
  'http',
  'auth',
  'webhooks',
  'events',
  'filters',
  'deliveries',
  'applications',
  'portal',
  '.',
];

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

/** A file's text without its comments (block comments, and line comments that start a line). */
const withoutComments = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/**
 * Every module a file names: `import`/`export ... from`, side-effect `import '...'`, and
 * `import('...')` (dynamic, or in a type), with either quote; and the file of src/ a relative one
 * names.
 */
function importsOf(file: string, text: string): { module: string; target: string | null }[] {
  const code = withoutComments(text);
  const modules = [
    ...code.matchAll(/\b(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/g),
    ...code.matchAll(/\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g),
  ].map((m) => m[1] as string);
  return modules.map((module) => ({
    module,
    target: module.startsWith('.')
      ? `${relative(SRC, resolve(SRC, dirname(file), module))}${module.endsWith('.json') ? '' : '.ts'}`
      : null,
  }));
}

/** Whether a file holds SQL only: a `store.ts`, or a file in a `store/` folder. */
const isStore = (file: string) => file.split('/').includes('store') || file.endsWith('/store.ts');

/** The files of one cycle of imports, if there is one. */
function cycle(tree: Tree): string[] | null {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (file: string): string[] | null => {
    if (state.get(file) === 'done') return null;
    if (state.get(file) === 'open') return [...path.slice(path.indexOf(file)), file];
    state.set(file, 'open');
    path.push(file);
    for (const { target } of importsOf(file, tree.get(file) ?? '')) {
      if (target === null || !tree.has(target)) continue;
      const found = visit(target);
      if (found !== null) return found;
    }
    path.pop();
    state.set(file, 'done');
    return null;
  };
  for (const file of tree.keys()) {
    const found = visit(file);
    if (found !== null) return found;
  }
  return null;
}

/**
 * What breaks the layering, one line each: an import up a layer or of no file, Hono below http/,
 * a Workers binding or runtime module in core/, a store importing anything but core/, platform/
 * and stores, a cycle. (The binding types that `wrangler types` generates name the Durable
 * Object classes through the entry point: a type-only edge of the generated file, not of ours.)
 */
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
      if (folder === 'core' && module.startsWith('cloudflare:'))
        found.push(`${file} -> ${module}: no runtime in core/`);
      if (target === null) continue;
      if (!tree.has(target)) found.push(`${file} -> ${module}: no such file`);
      else if (LAYERS.indexOf(folderOf(target)) > layer) found.push(`${file} -> ${target}: up a layer`);
      if (isStore(file) && !isStore(target) && !['core', 'platform'].includes(folderOf(target))) {
        found.push(`${file} -> ${target}: store to handler`);
      }
    }
    if (folder === 'core' && /CloudflareBindings|Cloudflare\.Env/.test(withoutComments(text))) {
      found.push(`${file}: bindings in core/`);
    }
  }
  const loop = cycle(tree);
  if (loop !== null) found.push(`cycle: ${loop.join(' -> ')}`);
  return found;
}

describe('the layers of src/', () => {
  it('has no import up a layer, no Hono below http/, no bindings in core/, no store importing a handler', () => {
    expect(violations(read(SRC))).toEqual([]);
  });

  it('is a check that fails: each kind of violation is found', () => {
    const tree: Tree = new Map([
      [
        'core/a.ts',
        "import { x } from '../http/b';\nimport { Hono } from \"hono\";\nimport '../app';\nlet e: Cloudflare.Env;\nimport { DurableObject } from 'cloudflare:workers';",
      ],
      ['core/f.ts', 'type T = typeof import(\'../deliveries/g\');\nconst m = () => import("../deliveries/g");'],
      ['deliveries/g.ts', ''],
      ['app.ts', ''],
      ['http/b.ts', "import { y } from './missing';"],
      ['webhooks/store/c.ts', "import { z } from '../d';"],
      ['events/store.ts', "import { w } from '../http/b';"],
      ['webhooks/d.ts', "import { v } from './e';"],
      ['webhooks/e.ts', "import { u } from './d';"],
      ['extra/e.ts', ''],
    ]);
    expect(violations(tree)).toEqual([
      'core/a.ts -> http/b.ts: up a layer',
      'core/a.ts -> hono: no Hono below http/',
      'core/a.ts -> app.ts: up a layer',
      'core/a.ts -> cloudflare:workers: no runtime in core/',
      'core/a.ts: bindings in core/',
      'core/f.ts -> deliveries/g.ts: up a layer',
      'core/f.ts -> deliveries/g.ts: up a layer',
      'http/b.ts -> ./missing: no such file',
      'webhooks/store/c.ts -> webhooks/d.ts: store to handler',
      'events/store.ts -> http/b.ts: store to handler',
      'extra/e.ts: folder extra is not a layer',
      'cycle: webhooks/d.ts -> webhooks/e.ts -> webhooks/d.ts',
    ]);
  });
});
