// `npm run deploy` (scripts/deploy.mjs) refuses an environment that lets webhooks into a local
// network. Run only against a temporary copy of wrangler.toml (DEPLOY_CONFIG): the refusal comes
// before any wrangler call, so nothing is deployed; the real configuration is only read.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { unstable_readConfig } from 'wrangler';

const root = new URL('../..', import.meta.url).pathname;
const folder = mkdtempSync(join(tmpdir(), 'nft-webhook-deploy-'));
afterAll(() => rmSync(folder, { recursive: true, force: true }));

const allowedOrigins = (config: string, env?: string) =>
  unstable_readConfig({ config, env }, { hideWarnings: true }).vars?.WEBHOOK_URL_ALLOWED_ORIGINS;

describe('npm run deploy and WEBHOOK_URL_ALLOWED_ORIGINS', () => {
  it('sets it in the local configuration only, never in staging or production', () => {
    const config = join(root, 'wrangler.toml');
    expect(allowedOrigins(config)).toContain('http://127.0.0.1:8790');
    expect(allowedOrigins(config, 'staging')).toBe('');
    expect(allowedOrigins(config, 'production')).toBe('');
  });

  it('refuses to deploy production when its configuration sets it (exit 1, naming the setting), before any wrangler call', () => {
    const production = '[env.production.vars]';
    const original = readFileSync(join(root, 'wrangler.toml'), 'utf8');
    const at = original.indexOf(production);
    expect(at).toBeGreaterThan(0);
    const head = original.slice(0, at);
    const tail = original.slice(at);
    const setting = /^WEBHOOK_URL_ALLOWED_ORIGINS = ""$/m;
    expect(tail).toMatch(setting);
    const config = join(folder, 'wrangler.toml');
    writeFileSync(config, head + tail.replace(setting, 'WEBHOOK_URL_ALLOWED_ORIGINS = "http://127.0.0.1:8790"'));
    // The copy sets it in production (and only there), or the script would go on to deploy.
    expect(allowedOrigins(config, 'production')).toBe('http://127.0.0.1:8790');
    expect(allowedOrigins(config, 'staging')).toBe('');

    const run = spawnSync('node', ['scripts/deploy.mjs', 'production'], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DEPLOY_CONFIG: config, WRANGLER_SEND_METRICS: 'false' },
    });
    expect(run.status, `${run.stdout}\n${run.stderr}`).toBe(1);
    expect(run.stderr).toContain('Refusing to deploy production: WEBHOOK_URL_ALLOWED_ORIGINS is set');
    expect(run.stderr).toContain('http://127.0.0.1:8790');
    // No wrangler command was started (the script prints `> wrangler ...` before each).
    expect(run.stdout).not.toContain('> wrangler');
  });
});
