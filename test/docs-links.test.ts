/**
 * The documentation links only to what a clone has: every relative link in README.md and docs/*.md
 * names a file of the repository, and a `#fragment` names a heading of the page it points to. The
 * same holds inside the packed tarball, where the README is read in node_modules.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, resolve } from 'node:path';
import { test } from 'node:test';

const ROOT = resolve(__dirname, '../..');
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

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
    const slug = title
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    result.add(count === 0 ? slug : `${slug}-${count}`);
  }
  return result;
}

/** The files links may point to: whether a path (relative to the root, "/"-separated) is there, and a Markdown file's text. */
interface Tree {
  /** A file, or a directory holding files. */
  has(path: string): boolean;
  /** The text of a Markdown file of the tree, or undefined when `path` is not one. */
  markdown(path: string): string | undefined;
}

const repository: Tree = {
  has: (path) => existsSync(join(ROOT, path)),
  markdown: (path) =>
    path.endsWith('.md') && existsSync(join(ROOT, path)) && statSync(join(ROOT, path)).isFile()
      ? readFileSync(join(ROOT, path), 'utf8')
      : undefined,
};

/** What is wrong with each relative link of `markdown`, a page at `page` (relative to the root of `tree`). */
function brokenLinks(page: string, markdown: string, tree: Tree = repository): string[] {
  const problems: string[] = [];
  for (const target of linkTargets(markdown)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto: — not a file of the repository
    const [path = '', fragment] = target.split('#', 2);
    if (path === '') {
      if (!anchors(markdown).has(fragment ?? '')) problems.push(`${target}: ${page} has no heading for it`);
      continue;
    }
    const file = posix.normalize(posix.join(posix.dirname(page), decodeURIComponent(path))).replace(/\/$/, '');
    if (file === '..' || file.startsWith('../') || posix.isAbsolute(file)) {
      problems.push(`${target}: outside the repository`);
      continue;
    }
    if (!tree.has(file)) {
      problems.push(`${target}: ${file} does not exist`);
      continue;
    }
    const text = tree.markdown(file);
    if (fragment !== undefined && text !== undefined && !anchors(text).has(fragment)) {
      problems.push(`${target}: ${file} has no heading for #${fragment}`);
    }
  }
  return problems;
}

for (const page of PAGES) {
  test(`every relative link in ${page} resolves inside the repository`, () => {
    assert.deepEqual(brokenLinks(page, readFileSync(join(ROOT, page), 'utf8')), []);
  });
}

test('every relative link in the README and docs of the packed tarball resolves inside the tarball', () => {
  // What `npm pack` would put in the tarball (the dist/ built by the test run is what it would ship).
  const report = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  const packed = new Set(
    (JSON.parse(report) as Array<{ files: Array<{ path: string }> }>)[0]?.files.map((f) => f.path),
  );
  const tarball: Tree = {
    has: (path) => packed.has(path) || [...packed].some((p) => p.startsWith(`${path}/`)),
    markdown: (path) => (packed.has(path) ? repository.markdown(path) : undefined),
  };
  const pages = [...packed].filter((p) => p.endsWith('.md'));
  assert.ok(pages.includes('README.md'), `the tarball has a README: ${[...packed].join(', ')}`);
  assert.deepEqual(
    pages.flatMap((page) => brokenLinks(page, tarball.markdown(page) ?? '', tarball).map((p) => `${page}: ${p}`)),
    [],
  );
});

test('the README and the docs link to each other', () => {
  const readme = linkTargets(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  for (const page of ['docs/api.md', 'docs/operations.md', 'docs/embedding.md', 'docs/design.md', 'LICENSE']) {
    assert.ok(readme.includes(page), `README.md links to ${page}`);
  }
});

test('the link check finds missing files, missing headings and links out of the repository', () => {
  // A check that found nothing would let every page pass.
  const page = [
    '# Title',
    '## A `code` heading',
    'Fine: [self](#title), [h](#a-code-heading), [readme](../README.md), [web](https://example.com).',
    'Broken: [a](missing.md), [b](#nowhere), [c](api.md#nowhere), [d](../../shared/spec/petstore-api.md).',
    '```md',
    '[in code](not-a-link.md)',
    '```',
  ].join('\n');
  assert.deepEqual(
    brokenLinks('docs/page.md', page).map((p) => p.split(':')[0]),
    ['missing.md', '#nowhere', 'api.md#nowhere', '../../shared/spec/petstore-api.md'],
  );
});
