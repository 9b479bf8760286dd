/**
 * What a start must notice in a data directory of format 4, each check held by a test that fails
 * when it is planted out: one pet lost after a clean stop, a line missing just before a skip line,
 * and journal ids that follow the snapshot's lastId (not its last pet).
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Pet } from '#dist/pet/pet.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { runCli } from './support.js';
import {
  TestFileSystem,
  dataDir,
  defer,
  idsText,
  journalText,
  recordLine,
  skipLine,
  snapshotText,
} from './store-support.js';

const pet = (id: number): Pet => ({ id, name: `pet ${id}`, categoryId: BigInt(id) });
const pets = (...ids: number[]): Pet[] => ids.map(pet);

async function directory(dir: string, files: Record<string, string>): Promise<string> {
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text, { mode: 0o600 });
  return dir;
}

test('after a clean stop with ids up to 4 handed out, records that end at 3 are refused: pet 4 may have been lost', async (t) => {
  const dir = await directory(await dataDir(t), {
    'pets.json': snapshotText(pets(1, 2, 3), 1),
    'pets-journal.1.jsonl': '',
    'pets-ids.json': idsText(4),
  });
  await assert.rejects(FileStore.open(dir), {
    message: /ids up to 4 handed out, but its records end at 3: pet 4 may have been lost/,
  });
});

test('a journal line missing just before a skip line is damage: the start is refused naming it', async (t) => {
  const journal = `${recordLine(pet(1))}\n${skipLine(3, 4)}${recordLine(pet(5))}\n`;
  const dir = await directory(await dataDir(t), {
    'pets.json': snapshotText([], 1, 0),
    'pets-journal.1.jsonl': journal,
    'pets-ids.json': idsText(5),
  });
  await assert.rejects(FileStore.open(dir), { message: /the line of pet 2 is missing/ });
});

test("a format-4 journal's ids follow the snapshot's lastId, not its last pet: ids handed out before the compaction are no gap", async (t) => {
  const dir = await directory(await dataDir(t), {
    'pets.json': snapshotText(pets(1, 2, 3), 1, 5),
    'pets-journal.1.jsonl': journalText(pets(6), 5),
    'pets-ids.json': idsText(6),
  });
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(
    [...store.list({ after: 0, limit: 10 }).pets].map((p) => p.id),
    [1, 2, 3, 6],
  );
  assert.equal((await store.create({ name: 'next', categoryId: 1n })).id, 7);
});

test('an id past the durable reservation is not handed out while the block after it is still being written', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  let release: () => void = () => {};
  const held = new Promise<undefined>((resolve) => (release = () => resolve(undefined)));
  let holding = false;
  fs.hook = (call) =>
    holding && call.op === 'rename' && call.to?.endsWith('pets-ids.json') === true ? held : undefined;
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, async () => {
    release();
    await store.close();
  });
  // The first block (ids 1–1024, reserved with the first create) is durable; the next is written in
  // the background once half of it is used, and held here before its rename.
  const many = async (from: number, to: number): Promise<void> => {
    for (let start = from; start <= to; start += 128) {
      await Promise.all(
        Array.from({ length: Math.min(128, to - start + 1) }, (_, i) =>
          store.create({ name: `pet ${start + i}`, categoryId: 1n }),
        ),
      );
    }
  };
  await many(1, 256);
  const durable = Number(/"reserved":([0-9]+)/.exec(await readFile(join(dir, 'pets-ids.json'), 'utf8'))?.[1]);
  holding = true;
  await many(257, durable);
  let released = false;
  const beyond = store.create({ name: 'beyond', categoryId: 1n }).then((p) => ({ id: p.id, released }));
  // Time is what is tried: given half a second, a create past the durable block must still wait.
  await Promise.race([beyond, new Promise((r) => setTimeout(r, 500))]);
  released = true;
  release();
  const answered = await beyond;
  assert.equal(answered.id, durable + 1);
  assert.equal(answered.released, true, `id ${durable + 1} was handed out before its reservation was durable`);
});

test('a journal line repeating a pet with other bytes of the same length is damage a repair sets aside, not a copy it drops', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  await mkdir(dir, { mode: 0o700 });
  const altered = { ...pet(2), name: 'pet X' };
  assert.equal(recordLine(altered).length, recordLine(pet(2)).length);
  const journal = `${recordLine(pet(1))}\n${recordLine(pet(2))}\n${recordLine(altered)}\n${recordLine(pet(3))}\n`;
  await directory(dir, {
    'pets.json': snapshotText([], 1, 0),
    'pets-journal.1.jsonl': journal,
    'pets-ids.json': idsText(3),
  });
  const copy = join(root, 'copy');
  await mkdir(copy, { mode: 0o700 });
  await directory(copy, {
    'pets.json': snapshotText([], 1, 0),
    'pets-journal.1.jsonl': journal.replace(recordLine(altered), recordLine(pet(2))),
    'pets-ids.json': idsText(3),
  });
  const repair = async (from: string, to: string): Promise<string> => {
    const result = await runCli(['repair', join(root, to), '--data-dir', from]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    return result.stdout;
  };
  // The same line twice is a copy: dropped, nothing set aside.
  assert.match(await repair(copy, 'from-copy'), /nothing was set aside/);
  assert.doesNotMatch(await repair(dir, 'from-altered'), /nothing was set aside/);
  assert.match(await readFile(join(root, 'from-altered', 'damaged-records.jsonl'), 'utf8'), /pet X/);
});
