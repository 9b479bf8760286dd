/**
 * The store hands replication a stable set of files (FileStore.holdFiles): while held, compaction
 * neither replaces pets.json nor removes a journal; creates go on, and the compaction waiting is done
 * once the hold is released. A round holds the files while it reads them, not while it uploads: a
 * destination that hangs holds up no compaction.
 */
import assert from 'node:assert/strict';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { type TestContext, test } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { readLiveDirectory } from '#dist/store/file/backup.js';
import { FileStore } from '#dist/store/file/file-store.js';
import type { Destination } from '#dist/store/file/replication/destinations/destination.js';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { waitFor } from './support.js';
import { stopsFor } from './replication-support.js';
import { dataDir } from './store-support.js';

const journals = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((name) => /^pets-journal\.[0-9]+\.jsonl$/.test(name)).sort();

/** A store of three pets whose files replication holds: its directory, the pets.json and journals held. */
async function threePetsHeld(t: TestContext) {
  const stops = stopsFor(t);
  const dir = join(await dataDir(t), 'data');
  const store = await FileStore.open(dir, { compactAfterBytes: 400 });
  stops.push({ stop: () => store.close() });
  for (let i = 0; i < 3; i++) await store.create({ name: `before ${i}`, categoryId: '1' } as never);
  // Granted once a compaction under way is done: what is seen from here on is the set held.
  const release = await store.holdFiles();
  const snapshot = await readFile(join(dir, 'pets.json'));
  const held = await journals(dir);
  return { dir, store, release, snapshot, held };
}

test('while replication holds the files, compaction replaces no pets.json and removes no journal; released, it goes on', async (t) => {
  const { dir, store, release, snapshot, held } = await threePetsHeld(t);
  for (let i = 0; i < 40; i++) await store.create({ name: `held ${i}`, categoryId: '1' } as never);
  assert.equal(store.size, 43, 'creates go on while the files are held');
  const rotated = await journals(dir);
  assert.ok(rotated.length > held.length, `the journal rotates: ${rotated.join()}`);
  assert.ok(
    held.every((name) => rotated.includes(name)),
    `no journal removed while held: ${rotated.join()}`,
  );
  assert.deepEqual(await readFile(join(dir, 'pets.json')), snapshot, 'pets.json not replaced while held');

  release();
  const compacted = async (): Promise<boolean> =>
    !(await readFile(join(dir, 'pets.json'))).equals(snapshot) &&
    (await journals(dir)).every((name) => !held.includes(name));
  await waitFor(compacted, 5000, 'pets.json replaced and the journals held removed once released');
});

test('a compaction held back while pets were created writes a pets.json that the journal after it continues', async (t) => {
  const { dir, store, release, snapshot, held } = await threePetsHeld(t);
  // Past the bound the journal rotates, and the creates after it go on into the new journal while the snapshot waits.
  for (let i = 0; i < 40; i++) await store.create({ name: `held ${i}`, categoryId: '1' } as never);
  release();
  const compacted = async (): Promise<boolean> =>
    !(await readFile(join(dir, 'pets.json'))).equals(snapshot) &&
    (await journals(dir)).every((name) => !held.includes(name));
  await waitFor(compacted, 5000, 'the compaction held back is done once released');
  // The directory as a crash (or a replication round) would find it now: every pet once, in id order.
  const live = await readLiveDirectory(nodeFileSystem, dir);
  assert.deepEqual(
    live.damage.map((d) => d.reason),
    [],
    'no line of the new journal repeats a pet of pets.json',
  );
  assert.equal(live.index.size, 43);
});

test('a destination that hangs holds up no compaction: a round holds the files while it reads them, not while it uploads', async (t) => {
  const stops = stopsFor(t);
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const store = await FileStore.open(dir, { compactAfterBytes: 400 });
  const inner = new DirectoryDestination(join(root, 'replica'));
  let hang = false;
  let puts = 0;
  let unblock = (): void => {};
  const blocked = new Promise<void>((resolve) => (unblock = resolve));
  const hanging: Destination = {
    name: 'hanging',
    get: (key, size) => inner.get(key, size),
    list: (prefix) => inner.list(prefix),
    delete: (key) => inner.delete(key),
    async put(key, bytes) {
      if (hang) {
        puts++;
        await blocked;
      }
      await inner.put(key, bytes);
    },
  };
  const silent = { request() {}, info() {}, error() {}, warn() {} };
  const replicator = await Replicator.start({
    dataDir: dir,
    store,
    destination: hanging,
    intervalMs: 20,
    logger: silent,
    retentionMs: 86_400_000,
  });
  stops.push({
    async stop() {
      unblock();
      await replicator.stop();
      await store.close();
    },
  });
  hang = true;
  replicator.begin();
  await waitFor(() => puts > 0, 5000, 'a round uploading to the hung destination');
  const before = await journals(dir);
  for (let i = 0; i < 40; i++) await store.create({ name: `pet ${i}`, categoryId: '1' } as never);
  const removed = async (): Promise<boolean> => (await journals(dir)).every((name) => !before.includes(name));
  await waitFor(removed, 5000, `the journals ${before} compacted away while the upload hangs`);
  assert.equal(puts, 1, 'the upload is still hung');
});
