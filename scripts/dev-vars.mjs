// Reads .dev.vars (KEY=value lines, # comments, optional quotes), as wrangler does for local runs.
import { existsSync, readFileSync } from 'node:fs';

export const DEV_VARS = new URL('../.dev.vars', import.meta.url);

export function readDevVars() {
  if (!existsSync(DEV_VARS)) return {};
  const vars = {};
  for (const line of readFileSync(DEV_VARS, 'utf8').split(/\r?\n/)) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*?)\s*$/.exec(line);
    if (!m || line.trimStart().startsWith('#')) continue;
    let value = m[2];
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    vars[m[1]] = value;
  }
  return vars;
}
