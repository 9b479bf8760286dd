/**
 * Retention keeps what the oldest position it keeps names: after a compaction the newest position
 * names a new pets.json, and the objects of the pets.json and journal before it are still needed by a
 * restore to the window's start.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { positionKeys, readPosition } from '#dist/store/file/replication/replica.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { applyRetention } from '#dist/store/file/replication/retention.js';
import { verifyReplicas } from '#dist/store/file/replication/verification.js';
import { runCli, waitFor } from './support.js';
import { dataDir } from './store-support.js';

const silent = { request() {}, info() {}, error() {}, warn() {} };

const snapshotOf = async (destination: DirectoryDestination, key: string): Promise<string | undefined> =>
  (await readPosition(destination, key)).position.files.find((file) => file.name === 'pets.json')?.segments[0]?.key;

test("retention keeps the objects of the window's first position when a compaction came after it", async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const destination = new DirectoryDestination(replica);
  // Small enough that a round's creates outgrow the snapshot: a compaction every round or two.
  const store = await FileStore.open(dir, { compactAfterBytes: 400 });
  const replicator = await Replicator.start({
    dataDir: dir,
    store,
    destination,
    intervalMs: 20,
    logger: silent,
    retentionMs: 86_400_000,
  });
  replicator.begin();
  try {
    for (let round = 0; round < 8; round++) {
      for (let i = 0; i < 5; i++) await store.create({ name: `pet ${round}.${i}`, categoryId: '1' } as never);
      await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 5000, 'shipped');
    }
  } finally {
    await replicator.stop();
    await store.close();
  }
  const positions = await positionKeys(destination);
  const newest = positions.at(-1) as string;
  // The pivot: the oldest position whose pets.json a later compaction replaced.
  const snapshotNow = await snapshotOf(destination, newest);
  let pivotAt = -1;
  for (let i = positions.length - 2; i >= 1 && pivotAt < 0; i--) {
    if ((await snapshotOf(destination, positions[i] as string)) !== snapshotNow) pivotAt = i;
  }
  assert.ok(pivotAt > 0, 'a compaction between two positions');
  const pivot = (await readPosition(destination, positions[pivotAt] as string)).position;

  const removed = await applyRetention(destination, pivot.store, pivot.lineage, 1000, Date.parse(pivot.time) + 1001);
  assert.ok(removed > 0);
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, () => {}), []);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica, '--until', pivot.time]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, new RegExp(`position ${pivot.seq}\\)`));
});
