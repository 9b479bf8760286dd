/**
 * Retention (--replicate-retention): what a restore within the window needs stays, the rest goes.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { positionKeys, readPosition } from '#dist/store/file/replication/replica.js';
import { verifyReplicas } from '#dist/store/file/replication/verification.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { applyRetention } from '#dist/store/file/replication/retention.js';
import { runCli, waitFor } from './support.js';
import { dataDir } from './store-support.js';

const silent = { request() {}, info() {}, error() {}, warn() {} };

/** Runs a store replicating to `replica` through `rounds` positions, each after a few creates, compacting often. */
async function lineageOf(dir: string, replica: string, rounds: number): Promise<string> {
  const store = await FileStore.open(dir, { compactAfterBytes: 400 });
  const replicator = await Replicator.start({
    dataDir: dir,
    store,
    destination: new DirectoryDestination(replica),
    intervalMs: 20,
    logger: silent,
    retentionMs: 86_400_000,
  });
  replicator.begin();
  try {
    for (let round = 0; round < rounds; round++) {
      for (let i = 0; i < 5; i++) await store.create({ name: `pet ${round}.${i}`, categoryId: '1' } as never);
      await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 5000, 'shipped');
    }
  } finally {
    await replicator.stop();
    await store.close();
  }
  return replicator.lineage;
}

test('retention removes the positions before the newest one older than the window, the objects only they name, and older lineages; what is left verifies and restores', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const destination = new DirectoryDestination(replica);
  const first = await lineageOf(dir, replica, 3);
  await new Promise((r) => setTimeout(r, 1100)); // lineage ids tell seconds apart
  const second = await lineageOf(dir, replica, 8);
  const own = (await positionKeys(destination)).filter((key) => key.includes(second));
  assert.ok(own.length >= 8, own.join());
  const pivot = (await readPosition(destination, own[4] as string)).position;
  const before = (await destination.list('lineages/')).length;
  const store = pivot.store;
  // A window that ends just after the fifth position of the second lineage.
  const removed = await applyRetention(destination, store, second, 1000, Date.parse(pivot.time) + 1001);
  const after = await destination.list('lineages/');
  assert.equal(after.length, before - removed);
  assert.ok(
    after.every((key) => !key.includes(first)),
    'the older lineage went',
  );
  const left = (await positionKeys(destination)).map((key) => Number(/([0-9]{12})\.json$/.exec(key)?.[1]));
  assert.deepEqual(
    left,
    Array.from({ length: own.length - 4 }, (_, i) => pivot.seq + i),
    'from the pivot on',
  );
  assert.ok(after.some((key) => key.includes('/data/')) && removed > 4, `objects went too: ${removed} removed`);
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, () => {}), []);
  const restored = await runCli([
    'restore',
    join(root, 'restored'),
    '--from',
    replica,
    '--until',
    new Date(Date.parse(pivot.time)).toISOString(),
  ]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, new RegExp(`position ${pivot.seq}\\)`));
  const newest = await runCli(['restore', join(root, 'newest'), '--from', replica]);
  assert.equal(newest.code, 0, newest.stderr);
  assert.match(newest.stdout, /^restored 55 pets/);
});

test("while the current lineage has no position older than the window, the newest earlier lineage stays: a restore to the window's start gives it back", async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const destination = new DirectoryDestination(replica);
  const first = await lineageOf(dir, replica, 3);
  await new Promise((r) => setTimeout(r, 1100)); // lineage ids tell seconds apart
  const second = await lineageOf(dir, replica, 2);
  const keys = await positionKeys(destination);
  const newestOfFirst = (await readPosition(destination, keys.filter((key) => key.includes(first)).at(-1) as string))
    .position;
  const firstOfSecond = (await readPosition(destination, keys.find((key) => key.includes(second)) as string)).position;
  assert.ok(Date.parse(newestOfFirst.time) < Date.parse(firstOfSecond.time) - 1);
  // The window starts 1 ms before the second lineage's first position: the first lineage's newest is older than it.
  const start = Date.parse(firstOfSecond.time) - 1;
  await applyRetention(destination, firstOfSecond.store, second, 1000, start + 1000);
  const left = await destination.list('lineages/');
  assert.ok(
    left.some((key) => key.includes(`${first}/positions/`)),
    'the first lineage stays',
  );
  assert.deepEqual(await verifyReplicas(nodeFileSystem, destination, () => {}), []);
  const restored = await runCli([
    'restore',
    join(root, 'restored'),
    '--from',
    replica,
    '--until',
    new Date(start).toISOString(),
  ]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 15 pets \(last id 15\)/);
  assert.match(restored.stdout, new RegExp(`lineage ${first}, position ${newestOfFirst.seq}\\)`));
});
