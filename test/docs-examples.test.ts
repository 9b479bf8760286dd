/**
 * The examples of docs/embedding.md run as written: each ```js block whose first line names its file
 * (`// example.cjs`, `// example.mjs`) is saved under that extension inside the package folder, so
 * that `petstore-api` resolves to this package, run with node, and must print exactly the ```text
 * block that follows it (JSON log lines, which start with `{`, aside).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { runNode } from './support.js';
import { metricsServer, scrape } from './metrics-support.js';

const GUIDE = 'docs/embedding.md';

interface Example {
  file: string;
  code: string;
  output: string[];
}

function examples(markdown: string): Example[] {
  const blocks = [...markdown.matchAll(/^```(\w*)[ \t]*\n([\s\S]*?)^```[ \t]*$/gm)].map((m) => ({
    info: m[1] as string,
    body: m[2] as string,
  }));
  const found: Example[] = [];
  for (const [i, block] of blocks.entries()) {
    const file = /^\/\/ ([\w-]+\.[cm]js)\n/.exec(block.body)?.[1];
    if (block.info !== 'js' || file === undefined) continue;
    const next = blocks[i + 1];
    assert.equal(
      next?.info,
      'text',
      `${GUIDE}: the example ${file} is followed by a \`\`\`text block of what it prints`,
    );
    found.push({ file, code: block.body, output: (next?.body ?? '').split('\n').filter((l) => l !== '') });
  }
  return found;
}

const guide = examples(readFileSync(resolve(__dirname, '../..', GUIDE), 'utf8'));

test(`${GUIDE} has a CommonJS and an ES module example, one with a store of the embedder's own`, () => {
  assert.ok(
    guide.some((e) => e.file.endsWith('.cjs') && /require\('petstore-api'\)/.test(e.code)),
    'a CommonJS example that requires the package',
  );
  assert.ok(
    guide.some((e) => e.file.endsWith('.mjs') && /from 'petstore-api'/.test(e.code)),
    'an ES module example that imports the package',
  );
  const own = guide.find((e) => /store: new /.test(e.code));
  assert.ok(own !== undefined, 'an example that supplies its own store');
  for (const member of ['list(', 'get(', 'create(', 'close(', 'ready'])
    assert.ok(own.code.includes(member), `its store has ${member}`);
  assert.match(own.code, /\.handler\(req, res, /, 'it mounts the handler with next');
});

for (const example of guide) {
  test(`${GUIDE}: ${example.file} runs and prints what the guide shows`, async (t) => {
    // Inside the package folder, so that `petstore-api` resolves to this package (self-reference).
    const path = join(__dirname, `tmp-docs-${randomBytes(6).toString('hex')}-${example.file}`);
    await writeFile(path, example.code);
    t.after(() => rm(path, { force: true }));
    const run = await runNode(path, 10_000);
    assert.equal(run.signal, null, `it exits by itself\nstdout: ${run.stdout}\nstderr: ${run.stderr}`);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(run.stderr, '');
    const printed = run.stdout.split('\n').filter((l) => l !== '' && !l.startsWith('{'));
    assert.deepEqual(printed, example.output);
  });
}

test('the sample scrape in docs/operations.md shows each family with the HELP text the server gives it', async (t) => {
  const sample = readFileSync(resolve(__dirname, '../../docs/operations.md'), 'utf8').match(/^# HELP .*$/gm) ?? [];
  assert.ok(sample.length >= 3, 'the guide shows a scrape');
  const server = await metricsServer(t);
  const { text } = await scrape(server.metricsUrl);
  for (const line of sample) assert.ok(text.split('\n').includes(line), `the server says it so: ${line}`);
});

test("every 200 with a JSON body in api.md's transcripts shows its ETag, as the server sends one on each", () => {
  const text = readFileSync(resolve(__dirname, '../../docs/api.md'), 'utf8');
  const heads = [...text.matchAll(/^HTTP\/1\.1 200 OK\n((?:[a-z-]+: .*\n)*)/gm)].map((m) => m[1] as string);
  const json = heads.filter((head) => head.includes('content-type: application/json'));
  assert.ok(json.length >= 5, `${json.length} transcripts of a JSON 200`);
  for (const head of json) assert.match(head, /^etag: W\/"[^"]+"$/m, head);
});
