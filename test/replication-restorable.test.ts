/**
 * `verify --from` checks what `restore` checks (restorable.ts): a position whose objects are intact but
 * whose pets.json and the journal after it repeat a pet, as a compaction delayed by replication's hold
 * once wrote, is taken by both when the repeat is the same bytes and refused by both when it is not.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import type { DurableJournal } from '#dist/store/file/replication/durable-files.js';
import { STORE_KEY, positionKey } from '#dist/store/file/replication/layout.js';
import { restoreReplica } from '#dist/store/file/replication/restore.js';
import { shipRound } from '#dist/store/file/replication/round.js';
import { storeIdDocument } from '#dist/store/file/replication/store-id.js';
import { verifyReplicas } from '#dist/store/file/replication/verification.js';
import { dataDir, journalText, snapshotText } from './store-support.js';
import { unshipped } from './replication-support.js';

const pet = (id: number, name = `pet ${id}`) => ({ id, name, categoryId: 1n }) as never;
const LINEAGE = '20261127T000000Z-000000000000';

test('verify passes what restore takes and names what it refuses: a pet repeated by pets.json and its journal is taken once when the same bytes, refused when not', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  await nodeFileSystem.mkdir(dir);
  const destination = new DirectoryDestination(join(root, 'replica'));
  await destination.put(STORE_KEY, storeIdDocument('0123456789abcdef0123456789abcdef'));
  const state = unshipped('0123456789abcdef0123456789abcdef', LINEAGE);
  // Nothing compacts this directory: a hold that holds nothing.
  const source = (length: number) => ({
    fs: nodeFileSystem,
    journal: (): DurableJournal => ({ generation: 2, length, idsHandedOut: 4 }),
    holdFiles: async () => () => {},
  });
  const journal = journalText([pet(4)], 3);
  await writeFile(join(dir, 'pets.json'), snapshotText([pet(1), pet(2), pet(3)], 2, 3));
  await writeFile(join(dir, 'pets-journal.2.jsonl'), journal);
  assert.equal((await shipRound(dir, destination, state, source(journal.length), 4)).shipped, true);
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, () => {}), [], 'position 1 is intact');

  // A snapshot that took in pet 4 beside the journal that holds it, as builds before the compaction fix shipped: the
  // repeated line is the same bytes, and restore gives every pet back once.
  await writeFile(join(dir, 'pets.json'), snapshotText([pet(1), pet(2), pet(3), pet(4)], 2, 4));
  assert.equal((await shipRound(dir, destination, state, source(journal.length), 4)).shipped, true);
  const said: string[] = [];
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, (line) => said.push(line)), []);
  assert.ok(
    said.some((line) => line.startsWith(`${positionKey(LINEAGE, 2)}: 1 journal line repeats or precedes pets`)),
    said.join('\n'),
  );
  const older = await restoreReplica(nodeFileSystem, destination, undefined, join(root, 'older'));
  assert.deepEqual([older.count, older.highest, older.setBack], [4, 4, 1]);

  // The same, but the snapshot's pet 4 differs from the journal's: which is the pet cannot be known.
  await writeFile(join(dir, 'pets.json'), snapshotText([pet(1), pet(2), pet(3), pet(4, 'x')], 2, 4));
  assert.equal((await shipRound(dir, destination, state, source(journal.length), 4)).shipped, true);
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, () => {}), [
    `${positionKey(LINEAGE, 3)}: restore refuses it: pets-journal.2.jsonl line 1 (byte 0): ` +
      'id 4 is not above the previous id 4 (may have held pets 5 and later)',
  ]);
  await assert.rejects(restoreReplica(nodeFileSystem, destination, undefined, join(root, 'refused')), {
    name: 'StoreDamagedError',
    message: /pets-journal\.2\.jsonl line 1 \(byte 0\): id 4 is not above the previous id 4/,
  });
  const earlier = await restoreReplica(nodeFileSystem, destination, { id: 4 }, join(root, 'earlier'));
  assert.deepEqual([earlier.position.position.seq, earlier.count, earlier.setBack], [1, 4, 0]);
});
