/**
 * What replication reads of a data directory: the open journal only up to its fdatasync'd length
 * (bytes past it may never have been acknowledged), every file handle it opens closed again, and a
 * replaced file read once per change, not once per failed round.
 */
import assert from 'node:assert/strict';
import { appendFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { ReplicationError, type Destination } from '#dist/store/file/replication/destinations/destination.js';
import { durableFiles, readRange, type DurableJournal } from '#dist/store/file/replication/durable-files.js';
import { shipRound } from '#dist/store/file/replication/round.js';
import { dataDir, journalText, snapshotText, TestFileSystem } from './store-support.js';
import { unshipped } from './replication-support.js';

test('the open journal counts up to its durable length, not its size on disk', async (t) => {
  const dir = await dataDir(t);
  const durable = journalText([{ id: 1, name: 'a', categoryId: 1n }]);
  await writeFile(join(dir, 'pets.json'), snapshotText([], 1, 0));
  await writeFile(join(dir, 'pets-journal.1.jsonl'), durable);
  // Bytes written but not yet fdatasync'd: a crash may cut them, and no client was told they are stored.
  await appendFile(join(dir, 'pets-journal.1.jsonl'), journalText([{ id: 2, name: 'b', categoryId: 2n }], 1));
  const length = Buffer.byteLength(durable);
  const { files } = await durableFiles(nodeFileSystem, dir, () => ({ generation: 1, length, idsHandedOut: 2 }));
  assert.deepEqual(
    files.find((f) => f.name === 'pets-journal.1.jsonl'),
    { name: 'pets-journal.1.jsonl', kind: 'appended', length, stamp: '' },
  );
});

test('readRange closes its file: 200 reads leave no descriptor open', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets-journal.1.jsonl'), 'x'.repeat(100));
  const open = async (): Promise<number> => (await readdir('/proc/self/fd')).length;
  const before = await open();
  for (let i = 0; i < 200; i++)
    assert.equal((await readRange(nodeFileSystem, dir, 'pets-journal.1.jsonl', 10, 20)).toString(), 'x'.repeat(10));
  assert.ok((await open()) - before < 5, `${(await open()) - before} more descriptors open`);
});

test('during an outage a replaced file read and hashed once is not read again while it is unchanged: the next try puts the same bytes', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets.json'), snapshotText([{ id: 1, name: 'a', categoryId: 1n }], 1, 1));
  await writeFile(join(dir, 'pets-journal.1.jsonl'), '');
  const put: Array<{ key: string; bytes: Uint8Array }> = [];
  const down: Destination = {
    name: 'down',
    get: async () => undefined,
    list: async () => [],
    delete: async () => {},
    put: async (key, bytes) => {
      put.push({ key, bytes });
      throw new ReplicationError('unreachable', 'down');
    },
  };
  const state = unshipped('s');
  const journal = (): DurableJournal => ({ generation: 1, length: 0, idsHandedOut: 1 });
  // Nothing compacts this directory: a hold that holds nothing.
  const source = { fs: nodeFileSystem, journal, holdFiles: async () => () => {} };
  for (let round = 0; round < 3; round++)
    await assert.rejects(shipRound(dir, down, state, source, 1), { reason: 'unreachable' });
  const snapshots = put.filter((p) => p.key.endsWith('-pets.json'));
  assert.equal(snapshots.length, 3);
  assert.equal(snapshots[1]?.bytes, snapshots[0]?.bytes, 'the same bytes, not read anew');
  assert.equal(snapshots[2]?.bytes, snapshots[0]?.bytes);
  // Changed, it is read again.
  await writeFile(join(dir, 'pets.json'), snapshotText([{ id: 1, name: 'b', categoryId: 1n }], 1, 1));
  await assert.rejects(shipRound(dir, down, state, source, 1));
  assert.notEqual(put.at(-1)?.bytes, snapshots[0]?.bytes);
});

test("replication reads the store's files through its FileSystem: an EIO there fails the round, and it goes through once the disk is back", async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets.json'), snapshotText([{ id: 1, name: 'a', categoryId: 1n }], 1, 1));
  await writeFile(join(dir, 'pets-journal.1.jsonl'), '');
  const fs = new TestFileSystem();
  fs.hook = (call) => (call.op === 'read' ? { code: 'EIO' } : undefined);
  const put: string[] = [];
  const up: Destination = {
    name: 'up',
    get: async () => undefined,
    list: async () => [],
    delete: async () => {},
    put: async (key) => void put.push(key),
  };
  const state = unshipped('s');
  const source = {
    fs,
    journal: (): DurableJournal => ({ generation: 1, length: 0, idsHandedOut: 1 }),
    holdFiles: async () => () => {},
  };
  await assert.rejects(shipRound(dir, up, state, source, 1), { code: 'EIO' });
  assert.equal(put.length, 0, 'nothing shipped');
  assert.ok(fs.log.includes('read pets.json !EIO'), fs.log.join());
  assert.equal(fs.count('openRead'), fs.count('close'), 'every file it opened closed');
  fs.hook = undefined;
  assert.equal((await shipRound(dir, up, state, source, 1)).shipped, true);
  assert.ok(put.some((key) => key.endsWith('-pets.json')));
});
