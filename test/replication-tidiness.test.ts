/**
 * Tidiness at the destination: what failed puts left is removed at the next round, retention leaves
 * no empty lineage directory, and another store's lineages (a destination taken over) are reported as
 * such by `verify --from`, which exits 0, and removed once past the retention window.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import {
  DirectoryDestination,
  nodeDirectoryCalls,
  type DirectoryCalls,
} from '#dist/store/file/replication/destinations/directory-destination.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { runCli, waitFor } from './support.js';
import { dataDir } from './store-support.js';

const silent = { request() {}, info() {}, error() {}, warn() {} };

/** Every file below `dir`, relative to it. */
async function filesBelow(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name));
}

/** A store replicating to `replica` (through `calls`), `creates` pets created and shipped, then stopped; its lineage. */
async function lineageOf(
  dir: string,
  replica: string,
  options: { creates?: number; retentionMs?: number; takeOver?: string } = {},
  calls: DirectoryCalls = nodeDirectoryCalls,
  during?: (replicator: Replicator, store: FileStore) => Promise<void>,
): Promise<string> {
  const store = await FileStore.open(dir);
  const destination = new DirectoryDestination(replica, calls, 2000);
  const replicator = await Replicator.start({
    dataDir: dir,
    store,
    destination,
    intervalMs: 20,
    logger: silent,
    retentionMs: options.retentionMs ?? 86_400_000,
    takeOver: options.takeOver,
  });
  replicator.begin();
  try {
    for (let i = 0; i < (options.creates ?? 1); i++) await store.create({ name: `pet ${i}`, categoryId: '1' } as never);
    await during?.(replicator, store);
    await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 5000, 'shipped');
  } finally {
    await replicator.stop();
    await store.close();
  }
  return replicator.lineage;
}

test('temp files that puts on a full destination left are removed by the next round that succeeds', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const full = { now: false };
  // As a full disk does: the temp file is made, its write fails.
  const calls: DirectoryCalls = {
    ...nodeDirectoryCalls,
    async writeDurably(path, bytes) {
      if (!full.now) return nodeDirectoryCalls.writeDurably(path, bytes);
      await nodeDirectoryCalls.writeDurably(path, bytes.subarray(0, 1));
      throw Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });
    },
  };
  await lineageOf(join(root, 'data'), replica, { creates: 3 }, calls, async (replicator, store) => {
    await waitFor(
      () => replicator.stats().lastSuccess !== undefined && replicator.stats().lagBytes === 0,
      5000,
      'the first rounds',
    );
    full.now = true;
    await store.create({ name: 'while the destination is full', categoryId: '1' } as never);
    await waitFor(() => (replicator.stats().failures.get('full') ?? 0) >= 5, 5000, 'five full rounds');
    assert.ok(
      (await filesBelow(replica)).some((file) => file.endsWith('.tmp')),
      'the failed puts left temp files',
    );
    full.now = false;
  });
  assert.deepEqual(
    (await filesBelow(replica)).filter((file) => file.endsWith('.tmp')),
    [],
  );
});

test("retention leaves no empty lineage directory; another store's lineages are said by verify (exit 0) and removed past the window", async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const first = await lineageOf(join(root, 'data'), replica);
  const second = await lineageOf(join(root, 'data'), replica);
  // Retention is about time: the two lineages are to be older than a one-second window.
  await new Promise((r) => setTimeout(r, 1100));
  const third = await lineageOf(join(root, 'data'), replica, { retentionMs: 1000 });
  assert.deepEqual(
    (await readdir(join(replica, 'lineages'))).sort(),
    [second, third].sort(),
    `${first} went, directories and all`,
  );

  // Another store takes the destination over: the old store's lineages are reported, not counted as damage.
  const owner = JSON.parse((await import('node:fs')).readFileSync(join(replica, 'store.json'), 'utf8')).store as string;
  const other = await lineageOf(join(root, 'other'), replica, { takeOver: owner });
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 0, verified.stdout);
  assert.match(
    verified.stdout,
    new RegExp(
      `lineage ${third} of store ${owner}, whose destination this store took over: not checked, removed after the retention window`,
    ),
  );
  await new Promise((r) => setTimeout(r, 1100));
  await lineageOf(join(root, 'other'), replica, { retentionMs: 1000 });
  const left = await readdir(join(replica, 'lineages'));
  assert.ok(!left.includes(second) && !left.includes(third), `the old store's lineages went: ${left.join()}`);
  assert.ok(left.includes(other));
});
