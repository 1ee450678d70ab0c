// An earlier release of this repository, read from git, for the upgrade tests: its tree unpacked
// with `git archive` into a folder of the test's, with this checkout's packages.
import { spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;

/** Why `commit` cannot be read from git here (a shallow clone, no git), or null when it can. */
function releaseMissing(commit: string): string | null {
  const run = spawnSync('git', ['cat-file', '-e', `${commit}^{commit}`], { cwd: root, encoding: 'utf8' });
  if (run.error !== undefined) return `git is not available (${run.error.message})`;
  if (run.status === 0) return null;
  const shallow = spawnSync('git', ['rev-parse', '--is-shallow-repository'], { cwd: root, encoding: 'utf8' });
  return shallow.stdout.trim() === 'true'
    ? `commit ${commit} is not in this shallow clone (fetch the history: git fetch --unshallow)`
    : `commit ${commit} is not in this repository`;
}

/**
 * The tree of release `commit`, unpacked into `folder`/release with this checkout's node_modules
 * linked in; its path. Skips the test (`context.skip`) when git cannot give the commit here.
 */
export function unpackRelease(commit: string, folder: string, context: { skip(note?: string): void }): string {
  const missing = releaseMissing(commit);
  if (missing !== null) {
    console.warn(`skipped: the upgrade test needs the git history: ${missing}`);
    context.skip(`needs the git history: ${missing}`);
  }
  const release = join(folder, 'release');
  mkdirSync(release);
  const archive = spawnSync('bash', ['-o', 'pipefail', '-c', `git archive ${commit} | tar -x -C "${release}"`], {
    cwd: root,
    encoding: 'utf8',
  });
  expect(archive.status, archive.stderr).toBe(0);
  symlinkSync(join(root, 'node_modules'), join(release, 'node_modules'));
  return release;
}
