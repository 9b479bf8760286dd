/**
 * `backup <dest>`: a consistent, compacted, durable copy of a data directory, also while a server
 * runs on it, that a server started on `dest` serves exactly.
 */
import assert from 'node:assert/strict';
import { appendFile, mkdir, readdir, readFile, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runBackupCommand } from '#dist/cli/backup-command.js';
import { readLiveDirectory } from '#dist/store/file/backup.js';
import { FileStore } from '#dist/store/file/file-store.js';
import {
  TEST_KEY,
  request,
  runCli,
  spawnServerFor,
  startServer,
  stopProcess,
  waitFor,
  type Response,
} from './support.js';
import { TestFileSystem, assertStopped, dataDir, defer, isJournalPath, plain, snapshotText } from './store-support.js';

const post = (url: string, name: string, categoryId: number): Promise<Response> =>
  request(url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ name, categoryId, ...(categoryId % 2 === 0 ? { status: 'sold' } : {}) }),
  });

/** Every page of GET /v1/pets?limit=7 as served (raw bodies, with the `after` each was asked with). */
async function pages(url: string): Promise<Array<{ after: number; text: string }>> {
  const result: Array<{ after: number; text: string }> = [];
  for (let after = 0; ; ) {
    const page = await request(url, 'GET', `/v1/pets?limit=7&after=${after}`);
    assert.equal(page.status, 200, page.text);
    result.push({ after, text: page.text });
    const pets = page.json as Array<{ id: number }>;
    if (page.headers.link === undefined || pets.length === 0) return result;
    after = (pets.at(-1) as { id: number }).id;
  }
}

/** Names of the temp directories a backup to `dest` may leave beside it. */
const tempsBeside = async (parent: string): Promise<string[]> =>
  (await readdir(parent)).filter((name) => name.endsWith('.tmp'));

async function backup(dataDir: string, dest: string): Promise<string> {
  const result = await runCli(['backup', dest, '--data-dir', dataDir]);
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, '');
  return result.stdout;
}

test('backup of a stopped data directory: the copy holds the same pets and key hashes, 0700, and a server on it serves them byte for byte', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const keyed = await runCli(['keys', 'create', '--label', 'ops', '--data-dir', dir]);
  assert.equal(keyed.code, 0, keyed.stderr);
  const original = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  for (let i = 1; i <= 20; i++)
    assert.equal((await post(original.url, `pet ${i} «${'x'.repeat(i)}»`, i * 1_000_000_007)).status, 201);
  assert.equal(await stopProcess(original), 0);

  const dest = join(root, 'backups', 'monday');
  assert.equal(await backup(dir, dest), `backed up 20 pets (last id 20) and 1 API key hash from ${dir} to ${dest}\n`);
  assert.equal((await stat(dest)).mode & 0o777, 0o700);
  assert.equal(
    await assertStopped(dest, ['keys.json', 'pets-ids.json']),
    1,
    'compacted: one snapshot and its empty journal',
  );
  assert.equal(await readFile(join(dest, 'keys.json'), 'utf8'), await readFile(join(dir, 'keys.json'), 'utf8'));
  assert.deepEqual(await tempsBeside(join(root, 'backups')), []);
  for (const name of await readdir(dest)) assert.equal((await stat(join(dest, name))).mode & 0o777, 0o600, name);

  const restored = await spawnServerFor(t, ['--data-dir', dest], { PETSTORE_API_KEYS: TEST_KEY });
  const again = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.deepEqual(await pages(restored.url), await pages(again.url));
  assert.equal(
    (await post(restored.url, 'next', 1)).text,
    '{"id":21,"name":"next","categoryId":1}',
    'ids continue after the last',
  );
  assert.equal(await stopProcess(restored), 0);
  assert.equal(await stopProcess(again), 0);
});

// Bounded by its 5 backups, each after 50 more creates; the timeout only stops a hang on a busy machine.
test('backup while the server takes a stream of creates and compacts: every pet acknowledged before it began is in the copy, served byte for byte', {
  timeout: 180_000,
}, async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  // In this process, so that the journal can be compacted every few dozen creates; the backup runs
  // as its own process, as it would beside a real server.
  const server = await startServer({ dataDir: dir, store: await FileStore.open(dir, { compactAfterBytes: 2000 }) });
  defer(t, () => server.stop());
  const acknowledged = new Map<number, string>();
  let stop = false;
  const client = async (c: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const res = await post(server.url, `client ${c} #${n}`, c * 100_000 + n);
      assert.equal(res.status, 201, res.text);
      acknowledged.set((res.json as { id: number }).id, res.text);
    }
  };
  const clients = Array.from({ length: 4 }, (_, c) => client(c));
  const copies: Array<{ dest: string; before: Map<number, string> }> = [];
  for (let i = 0; i < 5; i++) {
    const more = acknowledged.size + 50;
    await waitFor(() => acknowledged.size >= more, 60_000, `50 more creates before backup ${i}`);
    const dest = join(root, `copy-${i}`);
    copies.push({ dest, before: new Map(acknowledged) });
    assert.match(await backup(dir, dest), /^backed up \d+ pets \(last id \d+\)/);
  }
  stop = true;
  await Promise.all(clients);
  assert.ok(acknowledged.size > 200, `${acknowledged.size} creates`);
  const files = await readdir(dir);
  assert.ok(!files.includes('pets-journal.1.jsonl'), `the server compacted meanwhile: ${files.join(' ')}`);

  for (const { dest, before } of copies) {
    const copy = await FileStore.open(dest);
    const pets = copy.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets;
    const lastId = pets.at(-1)?.id ?? 0;
    await copy.close();
    for (const id of before.keys())
      assert.ok(id <= lastId, `pet ${id}, acknowledged before the backup began, is in ${dest}`);
    // No gap and nothing else: every id up to the last is the pet the server acknowledged.
    assert.deepEqual(
      pets.map((p) => p.id),
      Array.from({ length: lastId }, (_, i) => i + 1),
    );
    const restored = await spawnServerFor(t, ['--data-dir', dest], { PETSTORE_API_KEYS: TEST_KEY });
    for (const page of await pages(restored.url)) {
      const count = (JSON.parse(page.text) as unknown[]).length;
      const same = await server.request('GET', `/v1/pets?limit=${Math.max(count, 1)}&after=${page.after}`);
      assert.equal(page.text, count === 0 ? '[]' : same.text, `the page after ${page.after} of ${dest}`);
    }
    // Past the ids the running server had reserved when the copy was read: none it may have handed out is given again.
    const reserved = Number(
      /"reserved":(\d+),"stopped":true/.exec(await readFile(join(dest, 'pets-ids.json'), 'utf8'))?.[1],
    );
    assert.ok(reserved >= lastId, `reserved ${reserved}, last id ${lastId}`);
    assert.equal((await post(restored.url, 'next', 1)).text, `{"id":${reserved + 1},"name":"next","categoryId":1}`);
    assert.equal(await stopProcess(restored), 0);
  }
  await server.stop();
});

test('backup refuses a destination that is not empty or not a directory, exit 1, and changes nothing', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  await (await FileStore.open(dir)).close();
  const full = join(root, 'full');
  await mkdir(full);
  await writeFile(join(full, 'notes.txt'), 'mine');
  const refused = await runCli(['backup', full, '--data-dir', dir]);
  assert.equal(refused.code, 1);
  assert.equal(refused.stderr, `backup failed: ${full} is not empty; a backup goes into a new or empty directory\n`);
  assert.deepEqual(await readdir(full), ['notes.txt']);

  const file = join(root, 'file');
  await writeFile(file, 'x');
  const notDir = await runCli(['backup', file, '--data-dir', dir]);
  assert.equal(notDir.code, 1);
  assert.equal(notDir.stderr, `backup failed: ${file} exists and is not a directory\n`);

  const usage = await runCli(['backup', '--data-dir', dir]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: backup <dest-dir>/);

  // An empty directory is fine: it becomes the backup.
  const empty = join(root, 'empty');
  await mkdir(empty);
  await backup(dir, empty);
  assert.equal(await assertStopped(empty), 1);
  assert.deepEqual(await tempsBeside(root), []);
});

test('backup refuses a destination inside the data directory, or a symbolic link, before it copies anything', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const store = await FileStore.open(dir);
  await store.create({ name: 'Rex', categoryId: 7n });
  await store.close();
  const before = await readdir(dir);
  // A destination with a journal's name inside the store made the next start refuse the directory.
  for (const dest of [join(dir, 'pets-journal.99.jsonl'), join(dir, 'backups', 'monday'), dir, join(dir, '.')]) {
    const refused = await runCli(['backup', dest, '--data-dir', dir]);
    assert.equal(refused.code, 1, dest);
    assert.equal(
      refused.stderr,
      `backup failed: ${dest} is inside the data directory ${dir}; a backup goes outside it\n`,
    );
    assert.deepEqual(await readdir(dir), before, 'nothing is made in the data directory');
  }
  // Also when the data directory is named through a symbolic link, or the destination through one.
  await symlink(dir, join(root, 'alias'));
  const viaAlias = await runCli(['backup', join(root, 'alias', 'copy'), '--data-dir', dir]);
  assert.equal(viaAlias.code, 1);
  assert.match(viaAlias.stderr, /is inside the data directory/);
  const aliased = await runCli(['backup', join(dir, 'copy'), '--data-dir', join(root, 'alias')]);
  assert.equal(aliased.code, 1);
  assert.match(aliased.stderr, /is inside the data directory/);
  assert.deepEqual(await readdir(dir), before);

  // A link to an empty directory: refused at once, not after the whole copy.
  await mkdir(join(root, 'target'));
  await symlink(join(root, 'target'), join(root, 'link'));
  const link = await runCli(['backup', join(root, 'link'), '--data-dir', dir]);
  assert.equal(link.code, 1);
  assert.equal(
    link.stderr,
    `backup failed: ${join(root, 'link')} is a symbolic link; give the directory it points to, or a new path\n`,
  );
  assert.deepEqual(await readdir(join(root, 'target')), []);
  assert.deepEqual(
    (await readdir(root)).filter((name) => name.endsWith('.tmp')),
    [],
    'no temp directory was made',
  );

  // A sibling whose name starts like the data directory's is outside it.
  assert.match(await backup(dir, join(root, 'data-copy')), /^backed up 1 pet /);
});

test('backup of a directory that holds no store (a mistyped --data-dir) is refused, and makes nothing', async (t) => {
  const base = await dataDir(t);
  for (const source of [join(base, 'absent'), base]) {
    const dest = join(base, 'copy');
    const { code, stderr } = await runCli(['backup', dest, '--data-dir', source]);
    assert.equal(code, 1, stderr);
    assert.match(stderr, /^backup failed: (there is no data directory|.* holds no pet store)/);
    await assert.rejects(readdir(dest), { code: 'ENOENT' });
  }
});

test('a backup that fails before it is complete leaves no destination, only a temp directory that no backup or server takes for one', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const store = await FileStore.open(dir);
  const pet = await store.create({ name: 'Rex', categoryId: 7n });
  await store.close();
  const dest = join(root, 'dest');

  // A failure at the last step: the temp directory is removed and no destination appears.
  const failing = new TestFileSystem();
  failing.hook = (call) => (call.op === 'rename' && call.to === dest ? { code: 'EIO' } : undefined);
  await assert.rejects(
    runBackupCommand(dir, [dest], () => assert.fail('nothing is reported as written'), failing),
    { code: 'EIO' },
  );
  assert.deepEqual(await readdir(root), ['data']);

  // The process dies while pets.json is being written: the temp directory stays, half written.
  const dying = new TestFileSystem();
  dying.hook = (call) =>
    call.op === 'datasync' && call.path.includes('.pets.json.') ? new Promise(() => {}) : undefined;
  void runBackupCommand(dir, [dest], () => assert.fail('nothing is reported as written'), dying);
  for (let i = 0; i < 100 && !dying.log.some((entry) => entry.startsWith('write .pets.json')); i++)
    await new Promise((r) => setTimeout(r, 10));
  const [temp, ...others] = await tempsBeside(root);
  assert.ok(temp !== undefined && others.length === 0, 'one temp directory beside the destination');
  assert.match(temp, /^\.dest\.[0-9a-f]{12}\.tmp$/);
  assert.deepEqual(
    (await readdir(join(root, temp))).filter((name) => !name.startsWith('.pets.json.')),
    [],
    'nothing but the temp snapshot in it',
  );
  await assert.rejects(stat(dest), { code: 'ENOENT' }, 'the destination does not exist');

  // The next backup to the same destination is whole.
  assert.equal(await backup(dir, dest), `backed up 1 pet (last id 1) and 0 API key hashes from ${dir} to ${dest}\n`);
  assert.equal(await readFile(join(dest, 'pets.json'), 'utf8'), snapshotText([pet], 1));
  await dying.closeAbandoned();
});

test('a compaction that runs while the backup reads (its journal removed under it) makes the backup read again, and it misses no pet', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir, { compactAfterBytes: 100 });
  defer(t, () => store.close());
  for (let i = 0; i < 3; i++) await store.create({ name: `before ${i}`, categoryId: BigInt(i) });
  const fs = new TestFileSystem();
  let held = false;
  // The backup has listed the directory and read pets.json; before it reads the journal, the server
  // compacts: the journal is removed and pets.json replaced.
  fs.hook = async (call) => {
    if (held || call.op !== 'readFile' || !isJournalPath(call.path)) return undefined;
    held = true;
    for (let i = 0; (await readdir(dir)).includes(call.path.split('/').at(-1) as string); i++) {
      await store.create({ name: `during ${i}`, categoryId: BigInt(i) });
      await new Promise((r) => setTimeout(r, 5));
    }
    return undefined;
  };
  const { index } = await readLiveDirectory(fs, dir);
  assert.ok(held, 'the compaction ran under the read');
  assert.ok(fs.count('readdir') >= 4, 'the directory was read again');
  assert.deepEqual(
    index.list({ after: 0, limit: 1000 }).pets.map(plain),
    store.list({ after: 0, limit: 1000 }).pets.map(plain),
  );
  await store.close();
});

test('backup leaves out a torn last journal line: a create that was never acknowledged', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  const pet = await store.create({ name: 'Rex', categoryId: 7n });
  await appendFile(join(dir, 'pets-journal.1.jsonl'), '{"id":2,"name":"Half a p');
  const { index } = await readLiveDirectory(new TestFileSystem(), dir);
  assert.deepEqual(index.list({ after: 0, limit: 1000 }).pets.map(plain), [plain(pet)]);
  await store.close();
});
