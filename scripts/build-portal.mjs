// Builds the application portal (portal/) into build/assets/portal/, the folder that wrangler.toml's
// [assets] serves: one script and one style sheet, each named by a hash of its content, and the
// index.html that loads them. Run by wrangler's [build] command (so by `wrangler dev`, `npm start`,
// `wrangler deploy`, the deploy script and the benchmark's `wrangler deploy --dry-run`) and by
// vitest.config.ts (the Workers pool reads [assets] but runs no build). Safe to run at once from
// several processes: files are written only when their content changes, each by a rename.
// Nothing is built when no file the last build read has changed since (wrangler dev runs the
// [build] command twice as it starts: once for the entry, again when its watcher is ready).
// --report prints each file's size, raw and gzip; the build fails when script and style together
// exceed the budget of 100 KiB gzip.
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { build, version } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
export const ASSETS_DIR = join(root, 'build', 'assets');
const OUT = join(ASSETS_DIR, 'portal');
/** What the last build read (its files, by a digest of their contents) and wrote; outside the served folder. */
export const BUILD_RECORD = join(root, 'build', 'portal-build.json');
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

/** A digest of esbuild's version and of `files` (paths from the root), names and contents; throws if one is gone. */
function digestOf(files) {
  const digest = createHash('sha256').update(`esbuild ${version}\n`);
  for (const file of files) digest.update(`${file}\n`).update(readFileSync(join(root, file)));
  return digest.digest('base64url');
}

/** The last build's record, if every file it read is as it was and every file it wrote is there. */
function currentBuild() {
  try {
    const record = JSON.parse(readFileSync(BUILD_RECORD, 'utf8'));
    if (!record.sizes.every(({ name }) => existsSync(join(OUT, name)))) return undefined;
    return digestOf(record.inputs) === record.digest ? record : undefined;
  } catch {
    return undefined; // No record yet, or a file it names is gone.
  }
}

/**
 * Builds the portal, unless the last build is current; returns its files (name, raw and gzip
 * sizes) and whether it built them now.
 */
export async function buildPortal() {
  const current = currentBuild();
  if (current !== undefined) return { sizes: current.sizes, firstLoad: current.firstLoad, built: false };
  const started = Date.now();
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
    metafile: true,
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
  // Recorded unless a file it read changed while it ran (modified since it started, with a second
  // for file systems that keep mtimes to the second): then the next build reads it again.
  const inputs = [
    ...new Set([
      ...Object.keys(result.metafile.inputs),
      'portal/index.html',
      'portal/tsconfig.json',
      'scripts/build-portal.mjs',
    ]),
  ].sort();
  try {
    if (inputs.every((file) => statSync(join(root, file)).mtimeMs < started - 1000)) {
      put(BUILD_RECORD, Buffer.from(JSON.stringify({ digest: digestOf(inputs), inputs, sizes, firstLoad })));
    }
  } catch {
    // A file it read is gone already: nothing recorded, the next build reads again.
  }
  return { sizes, firstLoad, built: true };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { sizes, firstLoad, built } = await buildPortal();
  const said = built
    ? 'Portal built into build/assets/portal.'
    : 'Portal unchanged since its last build: build/assets/portal kept as it is.';
  // Run by wrangler (which sets WRANGLER_COMMAND), each line is shown prefixed, an empty one after
  // a last newline too.
  const report = process.argv.includes('--report');
  process.stdout.write(process.env.WRANGLER_COMMAND === undefined || report ? `${said}\n` : said);
  if (report) {
    for (const s of sizes)
      console.log(`${s.name.padEnd(28)} ${String(s.bytes).padStart(7)} B  ${String(s.gzip).padStart(6)} B gzip`);
    console.log(
      `script + style, gzip: ${firstLoad} B (${(firstLoad / 1024).toFixed(1)} KiB; budget ${BUDGET_GZIP_BYTES / 1024} KiB)`,
    );
  }
}
