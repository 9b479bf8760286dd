/**
 * The files carry their format version: this server reads the older formats and refuses newer ones
 * with a message saying so, before it changes anything.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { createHash } from 'node:crypto';
import { readKeyFile, writeKeyFile, type StoredKey } from '#dist/auth/key-file.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError } from '#dist/store/store.js';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { TEST_KEY, request, runCli, spawnServerFor, stopProcess, tempDirFor } from './helpers.js';
import { assertStopped, fileBytes } from './store-support.js';

const pet = '{"id":1,"name":"Rex","categoryId":7}';
const KEY: StoredKey = { id: 'a1b2c3d4', label: 'old', created: '2024-01-01T00:00:00.000Z', sha256: createHash('sha256').update(TEST_KEY).digest('hex') };

test('a pets.json of a newer format is refused as written by a newer version, and nothing is changed', async (t) => {
  const dir = await tempDirFor(t);
  // Whatever a newer version puts after its format name is not this version's to judge.
  await writeFile(join(dir, 'pets.json'), '{"format":"petstore-pets/3","snapshot":{"chunks":7}}\n');
  await writeFile(join(dir, 'pets-journal.4.jsonl'), `${pet}\n`);
  const before = await fileBytes(dir);
  await assert.rejects(FileStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError);
    assert.equal(error.message, `${join(dir, 'pets.json')} was written by a newer version of the server (format petstore-pets/3); upgrade the server to use this data`);
    return true;
  });
  assert.deepEqual(await fileBytes(dir), before);
  assert.deepEqual((await readdir(dir)).sort(), ['pets-journal.4.jsonl', 'pets.json'], 'no lock left');

  const cli = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(cli.code, 1);
  assert.match(cli.stderr, /written by a newer version of the server \(format petstore-pets\/3\); upgrade/);
});

test('a pets.json of format 1, written by the previous version, is served and upgraded to format 2 at start', async (t) => {
  const dir = await tempDirFor(t);
  await writeFile(join(dir, 'pets.json'), `{"format":"petstore-pets/1","pets":[\n${pet}\n]}\n`);
  await writeFile(join(dir, 'keys.json'), JSON.stringify({ keys: [KEY] }));
  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const listed = await request(server.url, 'GET', '/v1/pets');
  assert.equal(listed.status, 200, 'the key file without "format" is read: the key works');
  assert.equal(listed.text, `[${pet}]`);
  assert.match(await readFile(join(dir, 'pets.json'), 'utf8'), /^\{"format":"petstore-pets\/2","journal":1,"pets":\[\n/);
  assert.equal(await stopProcess(server), 0);
  await assertStopped(dir, ['keys.json']);
  assert.deepEqual(readKeyFile(join(dir, 'keys.json')), [KEY]);
});

test('keys.json is written with its format, and one of a newer format is refused as written by a newer version', async (t) => {
  const dir = await tempDirFor(t);
  const path = join(dir, 'keys.json');
  await writeKeyFile(nodeFileSystem, path, [KEY]);
  assert.equal(await readFile(path, 'utf8'), `${JSON.stringify({ format: 'petstore-keys/1', keys: [KEY] }, null, 2)}\n`);
  assert.deepEqual(readKeyFile(path), [KEY]);

  await writeFile(path, JSON.stringify({ format: 'petstore-keys/2', keys: [KEY] }));
  assert.throws(() => readKeyFile(path), { message: `${path} was written by a newer version of the server (format petstore-keys/2); upgrade the server to use this data` });
  await writeFile(path, JSON.stringify({ format: 'petstore-keys/0', keys: [KEY] }));
  assert.throws(() => readKeyFile(path), { message: `${path} is not a key file (expected "format": "petstore-keys/1"); restore it from a backup, or move it away if it is another file` });

  await writeFile(path, JSON.stringify({ format: 'petstore-keys/2', keys: [KEY] }));
  const cli = await runCli(['--port', '0', '--data-dir', dir]);
  assert.equal(cli.code, 1);
  assert.equal(cli.stderr, `cannot start: ${path} was written by a newer version of the server (format petstore-keys/2); upgrade the server to use this data\n`);
});
