/**
 * The files carry their format version: this server reads the older formats and refuses newer ones
 * with a message saying so, before it changes anything.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { createHash, hash } from 'node:crypto';
import { storedScope } from '#dist/auth/scope.js';
import { readKeyFile, writeKeyFile, type StoredKey } from '#dist/auth/key-file.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError } from '#dist/store/store.js';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import type { Pet } from '#dist/pet/pet.js';
import { TEST_KEY, request, runCli, spawnServerFor, stopProcess, tempDirFor } from './support.js';
import { assertStopped, fileBytes, recordLine, snapshotText } from './store-support.js';

const pet = '{"id":1,"name":"Rex","categoryId":7}';
const KEY: StoredKey = {
  id: 'a1b2c3d4',
  label: 'old',
  created: '2024-01-01T00:00:00.000Z',
  sha256: createHash('sha256').update(TEST_KEY).digest('hex'),
};

test('a pets.json of a newer format is refused as written by a newer version, and nothing is changed', async (t) => {
  const dir = await tempDirFor(t);
  // Whatever a newer version puts after its format name is not this version's to judge.
  await writeFile(join(dir, 'pets.json'), '{"format":"petstore-pets/5","snapshot":{"chunks":7}}\n');
  await writeFile(join(dir, 'pets-journal.4.jsonl'), `${pet}\n`);
  const before = await fileBytes(dir);
  await assert.rejects(FileStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError);
    assert.equal(
      error.message,
      `${join(dir, 'pets.json')} was written by a newer version of the server (format petstore-pets/5); upgrade the server to use this data`,
    );
    return true;
  });
  assert.deepEqual(await fileBytes(dir), before);
  assert.deepEqual((await readdir(dir)).sort(), ['pets-journal.4.jsonl', 'pets.json'], 'no lock left');

  const cli = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /written by a newer version of the server \(format petstore-pets\/5\); upgrade/);
});

test('a pets.json of format 1, written by an earlier version, is served and upgraded to format 4 at start', async (t) => {
  const dir = await tempDirFor(t);
  await writeFile(join(dir, 'pets.json'), `{"format":"petstore-pets/1","pets":[\n${pet}\n]}\n`);
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ keys: [KEY] }));
  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const listed = await request(server.url, 'GET', '/v1/pets');
  assert.equal(listed.status, 200, 'the key file without "format" is read: the key works');
  assert.equal(listed.text, `[${pet}]`);
  assert.equal(
    await readFile(join(dir, 'pets.json'), 'utf8'),
    snapshotText([{ id: 1, name: 'Rex', categoryId: 7n }], 1),
  );
  assert.equal(await stopProcess(server), 0);
  await assertStopped(dir, ['keys.json', 'pets-ids.json']);
  assert.deepEqual(readKeyFile(join(dir, 'keys.json')), [KEY]);
});

test('a directory of format 2 is served as it was, rewritten in format 4 at start (said once in the log), its idempotency keys kept', async (t) => {
  const dir = await tempDirFor(t);
  const names = ['Rex', 'Zoë "Z" \\ 猫 🐕', 'Tom'];
  const pets = names.map((name, i) => ({
    id: i + 1,
    name,
    categoryId: 9_007_199_254_740_993n * BigInt(i + 1),
    ...(i === 1 ? { status: 'sold' as const } : {}),
  }));
  const text = pets.map(
    (p) =>
      `${JSON.stringify({ id: p.id, name: p.name }).slice(0, -1)},"categoryId":${p.categoryId}${p.status === undefined ? '' : `,"status":"${p.status}"`}}`,
  );
  // Format 2: the snapshot names its journal; a keyed create's line carried its record as a member.
  const scope = await scopeOf(TEST_KEY);
  const record = `"idempotency":{"scope":"${scope}","key":"order-1","at":${Date.now()}}`;
  await writeFile(join(dir, 'pets.json'), `{"format":"petstore-pets/2","journal":2,"pets":[\n${text[0]}\n]}\n`);
  await writeFile(join(dir, 'pets-journal.2.jsonl'), `${text[1]}\n${(text[2] as string).slice(0, -1)},${record}}\n`);
  const server = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(
    (await request(server.url, 'GET', '/v1/pets')).text,
    `[${text.join(',')}]`,
    'every pet served byte for byte',
  );
  const replay = await request(server.url, 'POST', '/v1/pets', {
    headers: [
      ['content-type', 'application/json'],
      ['idempotency-key', 'order-1'],
    ],
    body: `{"name":"Tom","categoryId":${pets[2]?.categoryId}}`,
  });
  assert.equal(replay.status, 201);
  assert.equal(replay.headers['idempotent-replayed'], 'true', 'the key stored in format 2 is still known');
  const said = server
    .stdout()
    .split('\n')
    .filter((line) => line.includes('format 2'));
  assert.equal(said.length, 1, server.stdout());
  assert.match(
    said[0] as string,
    /pets\.json was in format 2, whose records carry no checksums: rewritten in format 4, which checks every record/,
  );
  // Already rewritten at start: format 4, every line with its checksum, the old journal gone.
  assert.equal(await assertStopped(dir), 3);
  const snapshot = await readFile(join(dir, 'pets.json'), 'utf8');
  assert.ok(
    snapshot.startsWith(
      `{"format":"petstore-pets/4","journal":3,"pets":[\n${recordLine(pets[0] as never)},\n${recordLine(pets[1] as never)},\n[${text[2]},{"scope":"${scope}"`,
    ),
    snapshot,
  );
  assert.equal(await stopProcess(server), 0);
  const again = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal((await request(again.url, 'GET', '/v1/pets')).text, `[${text.join(',')}]`);
  assert.doesNotMatch(again.stdout(), /format 2/, 'said once: the next start has nothing to say');
  assert.equal(await stopProcess(again), 0);
});

test("a directory of format 3 is served as it was, its journal's gaps too, and rewritten in format 4 at start, said once", async (t) => {
  const dir = await tempDirFor(t);
  const pets: Pet[] = [
    { id: 1, name: 'Rex', categoryId: 7n },
    { id: 2, name: 'Tom', categoryId: 8n },
    { id: 4, name: 'Kit', categoryId: 9n, status: 'sold' },
  ];
  // Format 3 wrote no skip line: id 3, taken by a create a failing disk refused, left no trace.
  await writeFile(join(dir, 'pets.json'), snapshotText(pets.slice(0, 1), 2, 1, 3));
  await writeFile(
    join(dir, 'pets-journal.2.jsonl'),
    pets
      .slice(1)
      .map((p) => `${recordLine(p)}\n`)
      .join(''),
  );
  const said: string[] = [];
  const store = await FileStore.open(dir, { onRepair: (message) => said.push(message) });
  assert.deepEqual(said, [
    `${join(dir, 'pets.json')} was in format 3, whose journals do not show a line missing from their middle: rewritten in format 4, whose do`,
  ]);
  assert.deepEqual(store.list({ after: 0, limit: 10 }).pets, pets);
  assert.equal(
    await readFile(join(dir, 'pets.json'), 'utf8'),
    snapshotText(pets, 3),
    'rewritten in format 4 before any create',
  );
  await store.close();
  said.length = 0;
  const again = await FileStore.open(dir, { onRepair: (message) => said.push(message) });
  assert.deepEqual(said, [], 'said once');
  assert.equal((await again.create({ name: 'Next', categoryId: 1n })).id, 5);
  await again.close();
});

test('keys.json is written with its format, and one of a newer format is refused as written by a newer version', async (t) => {
  const dir = await tempDirFor(t);
  const path = join(dir, 'keys.json');
  const scoped: StoredKey = { ...KEY, scopes: ['pets:read'], rateLimit: { requests: 60, seconds: 60 } };
  await writeKeyFile(nodeFileSystem, path, [scoped]);
  assert.equal(
    await readFile(path, 'utf8'),
    `${JSON.stringify({ format: 'petstore-keys/2', keys: [scoped] }, null, 2)}\n`,
  );
  assert.deepEqual(readKeyFile(path), [scoped]);

  await writeFile(path, JSON.stringify({ format: 'petstore-keys/3', keys: [KEY] }));
  assert.throws(() => readKeyFile(path), {
    message: `${path} was written by a newer version of the server (format petstore-keys/3); upgrade the server to use this data`,
  });
  await writeFile(path, JSON.stringify({ format: 'petstore-keys/0', keys: [KEY] }));
  assert.throws(() => readKeyFile(path), {
    message: `${path} is not a key file (expected "format": "petstore-keys/2"); restore it from a backup, or move it away if it is another file`,
  });

  await writeFile(path, JSON.stringify({ format: 'petstore-keys/3', keys: [KEY] }));
  const cli = await runCli(['--port', '0', '--data-dir', dir]);
  assert.equal(cli.code, 1);
  assert.equal(
    cli.stderr,
    `cannot start: ${path} was written by a newer version of the server (format petstore-keys/3); upgrade the server to use this data\n`,
  );
});

test('a keys.json of format 1 is read with every key holding both scopes, and the next keys create writes format 2 keeping them', async (t) => {
  const dir = await tempDirFor(t);
  const path = join(dir, 'keys.json');
  await writeFile(path, `${JSON.stringify({ format: 'petstore-keys/1', keys: [KEY] }, null, 2)}\n`, { mode: 0o600 });
  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const listed = await request(server.url, 'GET', '/v1/pets');
  assert.equal(listed.status, 200, 'the format-1 key reads');
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: '{"name":"Rex","categoryId":1}',
  });
  assert.equal(created.status, 201, 'and creates');
  assert.equal(await stopProcess(server), 0);

  const added = await runCli(['keys', 'create', '--label', 'new', '--scope', 'pets:read', '--data-dir', dir]);
  assert.equal(added.code, 0, added.stderr);
  const document = JSON.parse(await readFile(path, 'utf8')) as { format: string; keys: StoredKey[] };
  assert.equal(document.format, 'petstore-keys/2');
  assert.deepEqual(document.keys[0], KEY, 'the old key is kept as it was: without scopes, so with every scope');
  assert.deepEqual(document.keys[1]?.scopes, ['pets:read']);
  const list = await runCli(['keys', 'list', '--data-dir', dir]);
  assert.match(list.stdout, /^a1b2c3d4 {2}2024-01-01T00:00:00\.000Z {2}pets:read,pets:write {2}default {2}old$/m);
});

/** The name the server stores a key's idempotency records under (auth/scope.ts), as the key presented would get. */
function scopeOf(key: string): Promise<string> {
  return storedScope(hash('sha256', key, 'base64url'));
}
