// Every relative link of README.md and docs/*.md leads somewhere: the file exists in the
// repository, and a `#anchor` (in the same file or another Markdown file) is a heading there, by
// GitHub's rule for heading anchors. Links inside code blocks and code spans are not links.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = new URL('../..', import.meta.url).pathname;
const documents = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** Markdown text without fenced code blocks and code spans (whose brackets are not links). */
const prose = (text: string) => text.replace(/^(```|~~~)[\s\S]*?^\1/gm, '').replace(/`[^`\n]*`/g, '');

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/<[^>]*>/g, '')
    .replace(/[^\p{L}\p{N}\p{M} _-]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a Markdown file: one per heading, numbered from -1 when repeated. */
function anchors(file: string): Set<string> {
  const text = readFileSync(join(root, file), 'utf8').replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  const seen = new Map<string, number>();
  const result = new Set<string>();
  for (const [, heading] of text.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
    const base = slug(heading as string);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    result.add(n === 0 ? base : `${base}-${n}`);
  }
  return result;
}

/** The relative links of a document: [text](target) and [text]: target. */
function links(file: string): string[] {
  const text = prose(readFileSync(join(root, file), 'utf8'));
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const references = [...text.matchAll(/^\s*\[[^\]]+\]:\s*(\S+)/gm)].map((m) => m[1] as string);
  return [...inline, ...references].filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('the links of README.md and docs/*.md', () => {
  it('computes anchors as GitHub does', () => {
    expect(slug('Reads through D1 sessions, and read replicas')).toBe('reads-through-d1-sessions-and-read-replicas');
    expect(slug('The delivery log: `GET /v1.0/app/nft/webhook/delivery`')).toBe(
      'the-delivery-log-get-v10appnftwebhookdelivery',
    );
    expect(slug('`webhook_id`: an exact int64')).toBe('webhook_id-an-exact-int64');
  });

  it.each(documents)('%s: every relative link and #anchor resolves', (file) => {
    const broken: string[] = [];
    for (const target of links(file)) {
      const [path = '', anchor] = target.split('#', 2);
      const resolved = path === '' ? file : relative(root, join(root, dirname(file), decodeURIComponent(path)));
      if (resolved.startsWith('..') || !existsSync(join(root, resolved))) {
        broken.push(`${target}: no file ${resolved}`);
        continue;
      }
      if (anchor !== undefined && resolved.endsWith('.md') && !anchors(resolved).has(decodeURIComponent(anchor))) {
        broken.push(`${target}: no heading #${anchor} in ${resolved}`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('finds the links it checks (the checker is not checking nothing)', () => {
    const all = documents.flatMap(links);
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((l) => l.includes('#')).length).toBeGreaterThan(5);
  });
});
