// Builds the application portal (portal/) into build/assets/portal/, the folder that wrangler.toml's
// [assets] serves: one script and one style sheet, each named by a hash of its content, and the
// index.html that loads them. Run by wrangler's [build] command (so by `wrangler dev`, `npm start`,
// `wrangler deploy`, the deploy script and the benchmark's `wrangler deploy --dry-run`) and by
// vitest.config.ts (the Workers pool reads [assets] but runs no build). Safe to run at once from
// several processes: files are written only when their content changes, each by a rename.
// --report prints each file's size, raw and gzip; the build fails when script and style together
// exceed the budget of 100 KiB gzip.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
export const ASSETS_DIR = join(root, 'build', 'assets');
const OUT = join(ASSETS_DIR, 'portal');
/** Script and style of the first load together, gzip. */
export const BUDGET_GZIP_BYTES = 100 * 1024;

const hash = (bytes) => createHash('sha256').update(bytes).digest('base64url').slice(0, 10);

/** Writes `bytes` to `file` unless it already holds them; by a rename, so no reader sees half a file. */
function put(file, bytes) {
  if (existsSync(file) && readFileSync(file).equals(bytes)) return;
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, bytes);
  renameSync(temp, file);
}

/** Builds the portal; returns its files (name, raw and gzip sizes). */
export async function buildPortal() {
  const result = await build({
    absWorkingDir: root,
    entryPoints: { app: 'portal/src/main.tsx', style: 'portal/src/style.css' },
    bundle: true,
    minify: true,
    format: 'esm',
    target: ['chrome111', 'firefox111', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'hono/jsx/dom',
    tsconfig: 'portal/tsconfig.json',
    legalComments: 'none',
    write: false,
    outdir: OUT,
    logLevel: 'warning',
  });
  const files = new Map();
  for (const file of result.outputFiles) {
    const name = file.path.endsWith('.css') ? 'style' : 'app';
    const ext = file.path.endsWith('.css') ? 'css' : 'js';
    files.set(name, { name: `${name}-${hash(file.contents)}.${ext}`, bytes: Buffer.from(file.contents) });
  }
  const script = files.get('app');
  const style = files.get('style');
  const html = readFileSync(join(root, 'portal', 'index.html'), 'utf8')
    .replace('{{script}}', `/portal/${script.name}`)
    .replace('{{style}}', `/portal/${style.name}`);
  const outputs = [script, style, { name: 'index.html', bytes: Buffer.from(html) }];

  mkdirSync(OUT, { recursive: true });
  for (const { name, bytes } of outputs) put(join(OUT, name), bytes);
  // Files of earlier builds go (a leftover temporary file of another process is left alone).
  const keep = new Set(outputs.map((o) => o.name));
  for (const name of readdirSync(OUT)) {
    if (!keep.has(name) && !name.endsWith('.tmp')) rmSync(join(OUT, name), { force: true });
  }
  const sizes = outputs.map(({ name, bytes }) => ({
    name,
    bytes: bytes.length,
    gzip: gzipSync(bytes, { level: 9 }).length,
  }));
  const firstLoad = sizes.filter((s) => !s.name.endsWith('.html')).reduce((sum, s) => sum + s.gzip, 0);
  if (firstLoad > BUDGET_GZIP_BYTES) {
    throw new Error(
      `the portal's script and style are ${firstLoad} bytes gzip, over the budget of ${BUDGET_GZIP_BYTES}`,
    );
  }
  return { sizes, firstLoad };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { sizes, firstLoad } = await buildPortal();
  if (process.argv.includes('--report')) {
    for (const s of sizes)
      console.log(`${s.name.padEnd(28)} ${String(s.bytes).padStart(7)} B  ${String(s.gzip).padStart(6)} B gzip`);
    console.log(
      `script + style, gzip: ${firstLoad} B (${(firstLoad / 1024).toFixed(1)} KiB; budget ${BUDGET_GZIP_BYTES / 1024} KiB)`,
    );
  }
}
