/**
 * Names in the data directory: a symlink planted at a file's name is never followed, and the file it
 * points to stays as it was; the store refuses to start, naming the file.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { newKey } from '#dist/auth/key-file.js';
import { petJson } from '#dist/pet/codec.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError } from '#dist/store/store.js';
import { startError } from './support.js';
import { dataDir, defer } from './store-support.js';

const SNAPSHOT = `{"format":"petstore-pets/1","pets":[\n${petJson({ id: 1, name: 'Rex', categoryId: 7n })}\n]}\n`;

/** A data directory, and beside it a file that is not the store's, with what it holds. */
async function setting(
  t: TestContext,
  outsideText: string,
): Promise<{ dir: string; outside: string; check: () => Promise<void> }> {
  const base = await dataDir(t);
  const dir = join(base, 'data');
  await mkdir(dir, { mode: 0o700 });
  const outside = join(base, 'precious');
  await writeFile(outside, outsideText, { mode: 0o600 });
  const before = await stat(outside);
  const check = async (): Promise<void> => {
    assert.equal(await readFile(outside, 'utf8'), outsideText, 'the file outside is untouched');
    assert.equal((await stat(outside)).mtimeMs, before.mtimeMs);
  };
  return { dir, outside, check };
}

async function assertRefusedNaming(t: TestContext, dir: string, path: string): Promise<void> {
  await assert.rejects(
    FileStore.open(dir).then((store) => defer(t, () => store.close())),
    (error: unknown) => {
      assert.ok(error instanceof StoreOpenError, String(error));
      assert.ok(error.message.includes(path), error.message);
      assert.match(error.message, /symbolic link|not a regular file/);
      return true;
    },
  );
}

test('a symlink at the name of the next journal is refused, naming it, and the file it points to is untouched', async (t) => {
  // Its content has no final newline: read as a torn journal line, it would be cut to 0 bytes.
  const { dir, outside, check } = await setting(t, 'a root-owned file, not a journal');
  await writeFile(join(dir, 'pets-journal.1.jsonl'), `${petJson({ id: 1, name: 'Rex', categoryId: 7n })}\n`, {
    mode: 0o600,
  });
  await symlink(outside, join(dir, 'pets-journal.2.jsonl'));
  await assertRefusedNaming(t, dir, join(dir, 'pets-journal.2.jsonl'));
  await check();
});

test('a symlink at pets.json is refused, naming it, even when it points to a valid snapshot', async (t) => {
  const { dir, outside, check } = await setting(t, SNAPSHOT);
  await symlink(outside, join(dir, 'pets.json'));
  await assertRefusedNaming(t, dir, join(dir, 'pets.json'));
  await check();
});

test('a symlink at keys.json is refused at start, naming it', async (t) => {
  const { record } = newKey('elsewhere');
  const { dir, outside, check } = await setting(t, JSON.stringify({ keys: [record] }));
  await symlink(outside, join(dir, 'keys.json'));
  const error = await startError(dir);
  assert.ok(error.message.includes(join(dir, 'keys.json')), error.message);
  assert.match(error.message, /symbolic link|not a regular file/);
  await check();
});

test("a symlink at the lock's name is never followed: it is taken for a stale lock and replaced", async (t) => {
  const { dir, outside, check } = await setting(t, '1\n');
  await symlink(outside, join(dir, 'petstore.lock'));
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.match(await readlink(join(dir, 'petstore.lock')), new RegExp(`^${process.pid} `));
  await store.close();
  await check();
});
