/**
 * A journal line that repeats a pet of its position's pets.json is taken as a copy only when it is the
 * same bytes: one of the same length that says something else (another name of as many letters) is a
 * different pet under the same id, which verify names and restore refuses.
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

const STORE = '0123456789abcdef0123456789abcdef';
const LINEAGE = '20261127T000000Z-000000000000';
const pet = (id: number, name: string) => ({ id, name, categoryId: 1n }) as never;

test('a repeated journal line of the same length as its pet in pets.json but other bytes is refused, not dropped', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  await nodeFileSystem.mkdir(dir);
  const destination = new DirectoryDestination(join(root, 'replica'));
  await destination.put(STORE_KEY, storeIdDocument(STORE));
  const state = unshipped(STORE, LINEAGE);
  const journal = journalText([pet(2, 'Rex')], 3);
  // Nothing compacts this directory: a hold that holds nothing.
  const source = {
    fs: nodeFileSystem,
    journal: (): DurableJournal => ({ generation: 2, length: journal.length, idsHandedOut: 2 }),
    holdFiles: async () => () => {},
  };
  await writeFile(join(dir, 'pets.json'), snapshotText([pet(1, 'Ada'), pet(2, 'Max')], 2, 2));
  await writeFile(join(dir, 'pets-journal.2.jsonl'), journal);
  assert.equal((await shipRound(dir, destination, state, source, 2)).shipped, true);

  const problems = await verifyReplicas(nodeFileSystem, destination, () => {});
  assert.equal(problems.length, 1, problems.join('\n'));
  assert.match(problems[0] ?? '', new RegExp(`^${positionKey(LINEAGE, 1)}: restore refuses it: .*id 2 is not above`));
  await assert.rejects(restoreReplica(nodeFileSystem, destination, undefined, join(root, 'restored')), {
    name: 'StoreDamagedError',
  });
});
