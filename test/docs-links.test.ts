/**
 * The documentation links only to what a clone has: every relative link in README.md and docs/*.md
 * names a file of the repository, and a `#fragment` names a heading of the page it points to.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(__dirname, '../..');
const PAGES = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks and inline code, where a link is a link. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** Inline link targets `[text](target "title")` and reference definitions `[id]: target`. */
function linkTargets(markdown: string): string[] {
  const text = prose(markdown);
  const inline = [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1] as string);
  const references = [...text.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)].map((m) => m[1] as string);
  return [...inline, ...references];
}

/** GitHub's anchors for the headings of a page: lower case, punctuation dropped, spaces as hyphens. */
function anchors(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const result = new Set<string>();
  const withoutCode = markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$/gm, '');
  for (const match of withoutCode.matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)) {
    const title = (match[1] as string).replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    const slug = title.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** What is wrong with each relative link of `markdown`, a page at `page` (relative to the repository root). */
function brokenLinks(page: string, markdown: string, root = ROOT): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a file of the repository
    const [path = '', fragment] = target.split('#', 2);
    if (path === '') {
      if (!anchors(markdown).has(fragment ?? '')) problems.push(`${target}: ${page} has no heading for it`);
      continue;
    }
    const file = resolve(root, dirname(page), decodeURIComponent(path));
    if (file !== root && !file.startsWith(root + sep)) {
      problems.push(`${target}: outside the repository`);
      continue;
    }
    if (!existsSync(file)) {
      problems.push(`${target}: ${relative(root, file)} does not exist`);
      continue;
    }
    if (fragment !== undefined && file.endsWith('.md') && statSync(file).isFile() && !anchors(readFileSync(file, 'utf8')).has(fragment)) {
      problems.push(`${target}: ${relative(root, file)} has no heading for #${fragment}`);
    }
  }
  return problems;
}

for (const page of PAGES) {
  test(`every relative link in ${page} resolves inside the repository`, () => {
    assert.deepEqual(brokenLinks(page, readFileSync(join(ROOT, page), 'utf8')), []);
  });
}

test('the README and the docs link to each other', () => {
  const readme = linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  for (const page of ['docs/api.md', 'docs/operations.md', 'docs/embedding.md', 'docs/design.md', 'LICENSE']) {
    assert.ok(readme.includes(page), `README.md links to ${page}`);
  }
});

test('the link check finds missing files, missing headings and links out of the repository', () => {
  // A check that found nothing would let every page pass.
  const page = [
    '# Title', '## A `code` heading', 'Fine: [self](#title), [h](#a-code-heading), [readme](../README.md), [web](https://example.com).',
    'Broken: [a](missing.md), [b](#nowhere), [c](api.md#nowhere), [d](../../shared/spec/petstore-api.md).',
    '```md', '[in code](not-a-link.md)', '```',
  ].join('\n');
  assert.deepEqual(brokenLinks('docs/page.md', page).map((p) => p.split(':')[0]), [
    'missing.md', '#nowhere', 'api.md#nowhere', '../../shared/spec/petstore-api.md',
  ]);
});
