/**
 * Directories the store and `keys create` make: private (0700, whatever the umask), and durable —
 * the parent of each one made is fsync'ed, so a power cut cannot lose the new path with data in it.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { SERVER_JS, runCli, tempDirFor } from './support.js';
import { TestFileSystem, dataDir, defer } from './store-support.js';

const mode = async (path: string): Promise<number> => (await stat(path)).mode & 0o777;

test('directories the store and "keys create" make are 0700, each parent they make too, even with umask 000', async (t) => {
  const base = await tempDirFor(t);
  const previous = process.umask(0);
  t.after(() => process.umask(previous));
  const store = await FileStore.open(join(base, 'a', 'b', 'c'));
  await store.close();
  for (const dir of ['a', 'a/b', 'a/b/c']) assert.equal(await mode(join(base, dir)), 0o700, dir);
  // The child inherits this process's umask of 000.
  const made = await runCli(['keys', 'create', '--data-dir', join(base, 'x', 'y')]);
  assert.equal(made.code, 0, made.stderr);
  for (const dir of ['x', 'x/y']) assert.equal(await mode(join(base, dir)), 0o700, dir);
  assert.equal(await mode(join(base, 'x', 'y', 'keys.json')), 0o600);
});

test("the parent of every directory the store creates is fsync'ed after the mkdir", async (t) => {
  const base = await dataDir(t);
  const fs = new TestFileSystem();
  const dir = join(base, 'a', 'b', 'c');
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  const mkdirAt = fs.done.findIndex((c) => c.op === 'mkdir');
  assert.ok(mkdirAt >= 0);
  for (const parent of [base, join(base, 'a'), join(base, 'a', 'b')]) {
    const synced = fs.done.findIndex((c) => c.op === 'syncDir' && c.path === parent);
    assert.ok(synced > mkdirAt, `${parent} is synced after the mkdir:\n${fs.log.join('\n')}`);
  }
  assert.ok(
    fs.done.findIndex((c) => c.op === 'syncDir' && c.path === dirname(base)) < 0,
    "an existing directory's parent is left alone",
  );
});

const hasStrace = spawnSync('strace', ['-V']).status === 0 ? false : 'strace is not installed';

test('"keys create" fsyncs the parent of every directory it creates (seen with strace)', {
  skip: hasStrace,
}, async (t) => {
  const base = await tempDirFor(t);
  const trace = join(base, 'trace.txt');
  execFileSync(
    'strace',
    [
      '-f',
      '-y',
      '-e',
      'trace=mkdir,mkdirat,fsync',
      '-o',
      trace,
      process.execPath,
      SERVER_JS,
      'keys',
      'create',
      '--data-dir',
      join(base, 'x', 'y'),
    ],
    { stdio: 'ignore', env: { PATH: process.env.PATH } },
  );
  const lines = (await readFile(trace, 'utf8')).split('\n');
  const made = (path: string): number =>
    lines.findIndex((l) => new RegExp(`mkdir(at)?\\(.*"${path}", 0?700\\) = 0`).test(l));
  const synced = (path: string): number => lines.findIndex((l) => l.includes(`fsync(`) && l.includes(`<${path}>) = 0`));
  for (const [made_, parent] of [
    [join(base, 'x'), base],
    [join(base, 'x', 'y'), join(base, 'x')],
  ] as const) {
    assert.ok(made(made_) >= 0, `${made_} is made 0700:\n${lines.join('\n')}`);
    assert.ok(synced(parent) > made(made_), `${parent} is fsync'ed after ${made_} is made:\n${lines.join('\n')}`);
  }
});
