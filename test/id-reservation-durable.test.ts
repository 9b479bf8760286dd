/**
 * An id is handed out only once pets-ids.json durably reserves it: a reservation whose write failed
 * counts for nothing, so a start after a crash, which goes on past what the file says, never hands
 * out an id a client was given.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { RESERVE_BLOCK } from '#dist/store/file/id-reservation.js';
import { TestFileSystem, dataDir, defer } from './store-support.js';

test('while pets-ids.json cannot be replaced, no create gets an id past what it durably reserves', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const failing = { on: false };
  fs.hook = (call) =>
    failing.on && call.op === 'rename' && basename(call.to ?? '') === 'pets-ids.json' ? { code: 'EIO' } : undefined;
  // The top-up's failure is reported, not thrown: nothing waits on it.
  const store = await FileStore.open(dir, { fileSystem: fs, onBackgroundError: () => {} });
  defer(t, () => {
    failing.on = false;
    return store.close();
  });
  await store.create({ name: 'first', categoryId: 1n });
  failing.on = true;
  const onDisk = async (): Promise<number> =>
    Number(/"reserved":([0-9]+)/.exec(await readFile(join(dir, 'pets-ids.json'), 'utf8'))?.[1]);
  const reserved = await onDisk();
  // Past a block and a half: the top-up in the background fails, and then the write a create waits for.
  let highest = 0;
  let refused = 0;
  for (let batch = 0; batch < (RESERVE_BLOCK * 3) / 2 / 64 + 2; batch++) {
    const results = await Promise.allSettled(
      Array.from({ length: 64 }, (_, i) => store.create({ name: `pet ${batch}.${i}`, categoryId: 1n })),
    );
    for (const result of results) {
      if (result.status === 'fulfilled') highest = Math.max(highest, result.value.id);
      else refused++;
    }
  }
  assert.ok(highest > RESERVE_BLOCK / 2 && refused > 0, `ids up to ${highest} handed out, then ${refused} refused`);
  assert.equal(await onDisk(), reserved, 'the file never changed');
  assert.ok(highest <= reserved, `id ${highest} handed out, but pets-ids.json reserves only up to ${reserved}`);
});
