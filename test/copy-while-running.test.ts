/**
 * A copy of a data directory made with `cp -a` while a server runs on it must start with every pet
 * acknowledged before the copy began, or be refused; it must never start silently incomplete.
 *
 * cp lists the directory, then copies the listed files one by one. A compaction, meanwhile, does
 * three things in order: R, create journal g+1 (durable); P, rename a pets.json naming g+1 over the
 * one naming g; U, remove journal g. (Stopping the server does the same.) Before the copy began,
 * pets.json (g) and journal g held every acknowledged pet. Where the copy can land:
 *
 * | listing    | pets.json copied | journal g copied | journal g+1 | copy holds                | outcome                    |
 * | ---------- | ---------------- | ---------------- | ----------- | ------------------------- | -------------------------- |
 * | any        | before P         | before U         | either      | pets(g), g [, g+1]        | starts, complete           |
 * | before R   | before P         | after U (gone)   | not listed  | pets(g)                   | refused: g missing (loss)  |
 * | after R    | before P         | after U (gone)   | copied      | pets(g), g+1              | refused: g missing (loss)  |
 * | before R   | after P          | either           | not listed  | pets(g+1) [, g]           | refused: g+1 missing (1)   |
 * | after R    | after P          | either           | copied      | pets(g+1) [, g], g+1      | starts, complete (2)       |
 * | after U    | after P          | not listed       | copied      | pets(g+1), g+1            | starts, complete           |
 *
 * (1) Nothing is lost there (journal g+1 only holds pets created after the copy began), but the copy
 *     cannot tell this from the loss above it: it is refused too, and copying again succeeds.
 * (2) Journal g is covered by pets.json and ignored.
 * Also: a journal copied mid-append ends in a torn line, which is dropped (that create was not yet
 * acknowledged); a half-written temp snapshot is removed at start.
 *
 * Not detectable: two compactions during one copy, with cp reaching journal g+1 only after the
 * second removed it and g+2 not listed: the copy holds pets(g) and journal g, looks whole, and lacks
 * the pets of g+1. That needs the journal to grow past its bound (4 MiB, and at least the snapshot's
 * size) during one cp. Nor the one-time upgrade at the first start on a directory of format 1 left
 * by a crash, copied while that start removes its old journals. The safe copies: `backup`, or any
 * copy of a stopped server's directory.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError } from '#dist/store/store.js';
import type { Pet } from '#dist/pet/pet.js';
import { startServer, request } from './support.js';
import { DEAD_PID, dataDir, defer, fileBytes, idsText, journalText, plain, snapshotText } from './store-support.js';

const pets: Pet[] = Array.from({ length: 6 }, (_, i) => ({
  id: i + 1,
  name: `pet ${i + 1}`,
  categoryId: BigInt(i) * 11n,
}));
const journal = (from: number, to: number): string => journalText(pets.slice(from - 1, to));

// Before the compaction: pets.json (g = 2) holds 1–3, journal 2 holds 4–5 (all acknowledged before
// the copy began). After it: journal 3 holds 6 (created during the copy), pets.json (g = 3) holds 1–5.
const OLD_SNAPSHOT = snapshotText(pets.slice(0, 3), 2);
const NEW_SNAPSHOT = snapshotText(pets.slice(0, 5), 3);
const J2 = journal(4, 5);
const J3 = journal(6, 6);

// `next`: the id of the next create when not 7, past every id reserved and any a torn append may have held.
const STARTS: ReadonlyArray<{ what: string; files: Record<string, string>; holds: number; next?: number }> = [
  {
    what: 'old pets.json and journal g (copied before the compaction)',
    files: { 'pets.json': OLD_SNAPSHOT, 'pets-journal.2.jsonl': J2 },
    holds: 5,
  },
  {
    what: 'old pets.json, journal g and journal g+1',
    files: { 'pets.json': OLD_SNAPSHOT, 'pets-journal.2.jsonl': J2, 'pets-journal.3.jsonl': J3 },
    holds: 6,
  },
  {
    what: 'new pets.json, the covered journal g and journal g+1',
    files: { 'pets.json': NEW_SNAPSHOT, 'pets-journal.2.jsonl': J2, 'pets-journal.3.jsonl': J3 },
    holds: 6,
  },
  {
    what: 'new pets.json and journal g+1 (listed after the compaction)',
    files: { 'pets.json': NEW_SNAPSHOT, 'pets-journal.3.jsonl': J3 },
    holds: 6,
  },
  {
    what: 'a journal copied in the middle of an append',
    files: { 'pets.json': OLD_SNAPSHOT, 'pets-journal.2.jsonl': `${J2}[{"id":6,"name":"pe` },
    holds: 5,
  },
  {
    what: 'a half-written temp snapshot',
    files: {
      'pets.json': OLD_SNAPSHOT,
      '.pets.json.0a1b2c3d4e5f.tmp': NEW_SNAPSHOT.slice(0, 70),
      'pets-journal.2.jsonl': J2,
    },
    holds: 5,
  },
];

const REFUSED: ReadonlyArray<{ what: string; files: Record<string, string>; missing: number }> = [
  {
    what: 'old pets.json alone: journal g was removed before cp reached it',
    files: { 'pets.json': OLD_SNAPSHOT },
    missing: 2,
  },
  {
    what: 'old pets.json and journal g+1: journal g was removed before cp reached it',
    files: { 'pets.json': OLD_SNAPSHOT, 'pets-journal.3.jsonl': J3 },
    missing: 2,
  },
  {
    what: 'new pets.json and the covered journal g, journal g+1 not listed',
    files: { 'pets.json': NEW_SNAPSHOT, 'pets-journal.2.jsonl': J2 },
    missing: 3,
  },
  { what: 'new pets.json alone', files: { 'pets.json': NEW_SNAPSHOT }, missing: 3 },
  {
    what: 'a gap between journals',
    files: { 'pets.json': OLD_SNAPSHOT, 'pets-journal.2.jsonl': J2, 'pets-journal.4.jsonl': '' },
    missing: 3,
  },
  { what: 'journals without pets.json that do not start at 1', files: { 'pets-journal.2.jsonl': J2 }, missing: 1 },
];

async function copyOf(files: Record<string, string>, dir: string): Promise<void> {
  // pets-ids.json as the server left it while it ran: ids up to 6 reserved (its real block is larger).
  await writeFile(join(dir, 'pets-ids.json'), idsText(6, false));
  for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
  // The copy's lock names the server it was copied from, which does not run here.
  await writeFile(join(dir, 'petstore.lock'), `${DEAD_PID}\n`);
}

for (const { what, files, holds, next } of STARTS) {
  test(`a copy with ${what} starts with every pet acknowledged before the copy began`, async (t) => {
    const dir = await dataDir(t);
    await copyOf(files, dir);
    const store = await FileStore.open(dir);
    defer(t, () => store.close());
    assert.deepEqual(store.list({ after: 0, limit: 100 }).pets.map(plain), pets.slice(0, holds).map(plain));
    assert.equal((await store.create({ name: 'next', categoryId: 1n })).id, next ?? 7, 'past every id reserved');
    await store.close();
  });
}

for (const { what, files, missing } of REFUSED) {
  test(`a copy with ${what} is refused, naming the missing journal, and left as it is`, async (t) => {
    const dir = await dataDir(t);
    await copyOf(files, dir);
    const before = await fileBytes(dir);
    await assert.rejects(FileStore.open(dir), (error: unknown) => {
      assert.ok(error instanceof StoreOpenError, String(error));
      assert.match(error.message, /^incomplete data directory: /);
      assert.ok(
        error.message.includes(
          `but ${join(dir, `pets-journal.${missing}.jsonl`)} is missing; the pets in it would be lost.`,
        ),
        error.message,
      );
      return true;
    });
    assert.deepEqual(await fileBytes(dir), before);
  });
}

test('the refusal says what pets.json covers, what is missing and what to do', async (t) => {
  const dir = await dataDir(t);
  await copyOf({ 'pets.json': OLD_SNAPSHOT }, dir);
  await assert.rejects(FileStore.open(dir), {
    message:
      `incomplete data directory: ${join(dir, 'pets.json')} covers the journals before 2, but ${join(dir, 'pets-journal.2.jsonl')} is missing; ` +
      'the pets in it would be lost. A copy made while the server runs misses a journal that the server removed during the copy: ' +
      'copy it again, with the "backup" command or from a stopped server.',
  });
});

test('copies made with cp -a of a server that takes creates and compacts either start with every pet acknowledged before, or are refused', {
  timeout: 120_000,
}, async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const server = await startServer({ dataDir: dir, store: await FileStore.open(dir, { compactAfterBytes: 300 }) });
  defer(t, () => server.stop());
  const acknowledged: number[] = [];
  let stop = false;
  const client = async (c: number): Promise<void> => {
    for (let n = 0; !stop; n++) {
      const res = await request(server.url, 'POST', '/v1/pets', {
        headers: [['content-type', 'application/json']],
        body: `{"name":"c${c} n${n}","categoryId":${n}}`,
      });
      assert.equal(res.status, 201, res.text);
      acknowledged.push((res.json as { id: number }).id);
    }
  };
  const clients = Array.from({ length: 3 }, (_, c) => client(c));
  const outcomes = { started: 0, refused: 0 };
  for (let i = 0; i < 30; i++) {
    const copy = join(root, `copy-${i}`);
    const before = Math.max(0, ...acknowledged);
    // cp may fail on a file removed under it; the copy is judged all the same.
    await promisify(execFile)('cp', ['-a', dir, copy]).catch((error: unknown) => error);
    await writeFile(join(copy, 'petstore.lock'), `${DEAD_PID}\n`);
    const opened = await FileStore.open(copy).catch((error: unknown) => error);
    if (opened instanceof FileStore) {
      const ids = opened.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets.map((p) => p.id);
      await opened.close();
      assert.ok(
        ids.length >= before && ids.every((id, k) => id === k + 1),
        `copy ${i} holds 1..${ids.length}, at least the ${before} acknowledged before`,
      );
      outcomes.started++;
    } else {
      assert.ok(
        opened instanceof StoreOpenError && opened.message.startsWith('incomplete data directory'),
        String(opened),
      );
      outcomes.refused++;
    }
  }
  stop = true;
  await Promise.all(clients);
  await server.stop();
  t.diagnostic(`copies: ${JSON.stringify(outcomes)}`);
  assert.ok(outcomes.started > 0, `some copies started: ${JSON.stringify(outcomes)}`);
  assert.ok((await readdir(dir)).includes('pets.json'));
});
