import assert from 'node:assert/strict';
import { readdir, readFile, readlink, stat, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError, StoreUnavailableError } from '#dist/store/store.js';
import { petJson } from '#dist/pet/codec.js';
import type { NewPet, Pet } from '#dist/pet/pet.js';
import type { PetStatus } from '#dist/pet/contract.js';
import {
  DEAD_PID,
  TestFileSystem,
  assertStopped,
  dataDir,
  dataFiles,
  defer,
  idsText,
  isJournalPath,
  journalText,
  plain,
  recordLine,
  snapshotText,
} from './store-support.js';
import { waitFor, within } from './support.js';

const STATUSES: ReadonlyArray<PetStatus | undefined> = [undefined, 'available', 'pending', 'sold'];

function newPet(i: number): NewPet {
  const status = STATUSES[i % STATUSES.length];
  const pet = { name: `pet ${i}`, categoryId: BigInt(i) * 1000n };
  return status === undefined ? pet : { ...pet, status };
}

function allPets(store: FileStore): Pet[] {
  return [...store.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets];
}

/** A snapshot of format 1, as servers before format 2 wrote it. */
const snapshotTextV1 = (pets: readonly Pet[]): string =>
  `{"format":"petstore-pets/1","pets":[\n${pets.map(petJson).join(',\n')}${pets.length > 0 ? '\n' : ''}]}\n`;
/** Journal lines of formats 1 and 2: each pet's text alone. */
const legacyJournalText = (pets: readonly Pet[]): string => pets.map((p) => `${petJson(p)}\n`).join('');

/** Asserts that each entry occurs in `log`, the first occurrence of each after that of the previous. */
function assertInOrder(log: readonly string[], entries: readonly string[]): void {
  let at = -1;
  for (const entry of entries) {
    const next = log.indexOf(entry, at + 1);
    assert.ok(next > at, `"${entry}" should follow "${log[at] ?? '(start)'}" in:\n${log.join('\n')}`);
    at = next;
  }
}

test('open creates a missing data directory with an empty journal and the empty snapshot naming it, takes the lock and is ready', async (t) => {
  const dir = join(await dataDir(t), 'nested', 'data');
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.equal(store.ready, true);
  assert.equal(store.size, 0);
  assert.deepEqual(store.list({ after: 0, limit: 20 }), { pets: [], more: false });
  assert.equal(store.get(1), undefined);
  assert.deepEqual(await dataFiles(dir), ['pets-ids.json', 'pets-journal.1.jsonl', 'pets.json']);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([], 1));
  assert.match(
    await readlink(join(dir, 'petstore.lock')),
    new RegExp(`^${process.pid} `),
    'the lock names this process',
  );
  await store.close();
});

test('the journal and the snapshot are readable by their owner only (0600), also with umask 000', async (t) => {
  const dir = await dataDir(t);
  const previous = process.umask(0);
  defer(t, () => process.umask(previous));
  const store = await FileStore.open(dir, { compactAfterBytes: 1 });
  defer(t, () => store.close());
  for (let i = 0; i < 5; i++) await store.create(newPet(i));
  await store.close();
  const names = await dataFiles(dir);
  assert.deepEqual(names.filter((n) => n.endsWith('.jsonl')).length, 1, `a journal and pets.json: ${names.join(', ')}`);
  for (const name of names) assert.equal((await stat(join(dir, name))).mode & 0o777, 0o600, name);
});

test('create assigns ids 1, 2, 3… and keeps name, status and int64 categoryIds exactly', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  const inputs: NewPet[] = [
    { name: 'Rex', categoryId: 2n ** 63n - 1n, status: 'available' },
    { name: 'Émile "the cat" \u2028 🐈', categoryId: -(2n ** 63n) },
    { name: 'x'.repeat(256), categoryId: 9007199254740993n, status: 'sold' },
  ];
  const created: Pet[] = [];
  for (const input of inputs) created.push(await store.create(input));
  assert.deepEqual(
    created.map(plain),
    inputs.map((input, i) => plain({ id: i + 1, ...input })),
  );
  assert.deepEqual(allPets(store), created);
  assert.deepEqual(store.get(2), created[1]);
  assert.deepEqual(store.list({ after: 0, limit: 10, status: 'sold' }).pets, [created[2]]);
  await store.close();

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened), created);
  assert.equal((await reopened.create({ name: 'next', categoryId: 0n })).id, 4);
});

test('an acknowledged create is already in the journal on disk', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  const first = await store.create(newPet(1));
  assert.equal(await readFile(join(dir, 'pets-journal.1.jsonl'), 'utf8'), `${recordLine(first)}\n`);
  const second = await store.create(newPet(2));
  assert.equal(await readFile(join(dir, 'pets-journal.1.jsonl'), 'utf8'), journalText([first, second]));
});

test("a create is written to the journal, then fdatasync'ed, and only then acknowledged", async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  fs.log.length = 0;
  await store.create(newPet(1)).then(() => fs.log.push('resolved'));
  // The first create after a start reserves a block of ids first (pets-ids.json, replaced as pets.json is).
  const reserve = ['open', 'write', 'datasync', 'close'].map((op) => `${op} .pets-ids.json.*.tmp`);
  assert.deepEqual(fs.log, [
    ...reserve,
    'rename .pets-ids.json.*.tmp -> pets-ids.json',
    `syncDir ${basename(dir)}`,
    'write pets-journal.1.jsonl',
    'datasync pets-journal.1.jsonl',
    'resolved',
  ]);
  // The next finds its id reserved: one write and one fdatasync, nothing else.
  fs.log.length = 0;
  await store.create(newPet(2)).then(() => fs.log.push('resolved'));
  assert.deepEqual(fs.log, ['write pets-journal.1.jsonl', 'datasync pets-journal.1.jsonl', 'resolved']);
});

test('a new journal is created and the directory synced before its first line is written', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const sync = `syncDir ${basename(dir)}`;
  // The bound in force is the empty snapshot's size: two creates outgrow it, and the third goes to journal 2.
  const store = await FileStore.open(dir, { fileSystem: fs, compactAfterBytes: 1 });
  defer(t, () => store.close());
  for (let i = 1; i <= 3; i++) await store.create(newPet(i));
  await store.close();
  assertInOrder(fs.log, [
    'open pets-journal.1.jsonl',
    sync,
    'write pets-journal.1.jsonl',
    'datasync pets-journal.1.jsonl',
  ]);
  assertInOrder(fs.log, [
    'open pets-journal.2.jsonl',
    sync,
    'write pets-journal.2.jsonl',
    'datasync pets-journal.2.jsonl',
  ]);
  // The new journal's name is durable before the old one is given up.
  assertInOrder(fs.log, ['open pets-journal.2.jsonl', sync, 'close pets-journal.1.jsonl']);
});

test("a snapshot is written to a temp file, fdatasync'ed, closed, renamed over pets.json and the directory synced before any journal is removed", async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const sync = `syncDir ${basename(dir)}`;
  const store = await FileStore.open(dir, { fileSystem: fs, compactAfterBytes: 1 });
  defer(t, () => store.close());
  const opened = fs.log.length;
  const pet = await store.create(newPet(1));
  await store.close();
  // What follows the open (which wrote the empty snapshot the same way).
  const log = fs.log.slice(opened);
  const temp = '.pets.json.*.tmp';
  const lastTempWrite = log.lastIndexOf(`write ${temp}`);
  const datasync = log.indexOf(`datasync ${temp}`);
  const close = log.indexOf(`close ${temp}`);
  const rename = log.indexOf(`rename ${temp} -> pets.json`);
  const dirSync = log.indexOf(sync, rename);
  const firstUnlink = log.findIndex((entry) => entry.startsWith('unlink pets-journal.'));
  assert.ok(lastTempWrite >= 0 && lastTempWrite < datasync, log.join('\n'));
  assert.ok(datasync < close && close < rename && rename < dirSync && dirSync < firstUnlink, log.join('\n'));
  assert.equal(
    log.indexOf(`open ${temp}`),
    log.findIndex((entry) => entry.includes(temp)),
    'the temp file is opened first',
  );
  assert.ok(
    log.slice(log.indexOf('write pets-journal.1.jsonl')).every((entry) => !entry.includes('!')),
    `no call failed:\n${log.join('\n')}`,
  );
  // Then the clean stop is written down in pets-ids.json (id-reservation.ts), last.
  const stopped = log.indexOf('open .pets-ids.json.*.tmp', firstUnlink);
  assert.equal(log[stopped - 2], sync, 'removing journals is made durable too');
  assert.equal(log[stopped - 1], 'close pets-journal.2.jsonl', 'then the journal the snapshot names is closed');
  assert.equal(log.at(-1), sync, 'and the clean stop is durable');
  assert.equal(await assertStopped(dir), 2);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([pet], 2));
});

test('200 concurrent creates all resolve, with distinct ids 1..200, in few group commits', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  const inputs = Array.from({ length: 200 }, (_, i) => newPet(i));
  const created = await Promise.all(inputs.map((input) => store.create(input)));
  for (const [i, pet] of created.entries())
    assert.deepEqual({ ...plain(pet), id: 0 }, plain({ id: 0, ...(inputs[i] as NewPet) }));
  assert.deepEqual(
    created.map((p) => p.id).sort((a, b) => a - b),
    Array.from({ length: 200 }, (_, i) => i + 1),
  );
  const syncs = fs.count('datasync', isJournalPath);
  assert.ok(syncs >= 1 && syncs <= 10, `200 creates took ${syncs} fdatasyncs`);
  assert.equal(fs.count('write', isJournalPath), syncs, 'one append per commit');
  assert.equal(store.size, 200);
  await store.close();

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened).map(plain), [...created].sort((a, b) => a.id - b.id).map(plain));
});

test('1000 concurrent creates under constant compaction lose nothing across close and reopen', async (t) => {
  const dir = await dataDir(t);
  const errors: unknown[] = [];
  const store = await FileStore.open(dir, { compactAfterBytes: 64, onBackgroundError: (error) => errors.push(error) });
  defer(t, () => store.close());
  const created: Pet[] = [];
  // Waves of concurrent creates, so that compactions overlap with commits.
  for (let wave = 0; wave < 10; wave++) {
    created.push(...(await Promise.all(Array.from({ length: 100 }, (_, i) => store.create(newPet(wave * 100 + i))))));
  }
  assert.deepEqual(new Set(created.map((p) => p.id)).size, 1000);
  await store.close();
  assert.deepEqual(errors, []);
  await assertStopped(dir);

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened).map(plain), [...created].sort((a, b) => a.id - b.id).map(plain));
  assert.equal((await reopened.create(newPet(0))).id, 1001);
});

test('compaction keeps at most two journals while running, and every pet survives', async (t) => {
  const dir = await dataDir(t);
  const errors: unknown[] = [];
  const store = await FileStore.open(dir, { compactAfterBytes: 100, onBackgroundError: (error) => errors.push(error) });
  defer(t, () => store.close());
  const created: Pet[] = [];
  let snapshots = 0;
  for (let i = 0; i < 300; i++) {
    created.push(await store.create(newPet(i)));
    const files = await dataFiles(dir);
    assert.ok(files.filter(isJournalPath).length <= 2, files.join(' '));
    // The snapshot open wrote names journal 1; a later one names a later journal.
    if (!(await readFile(join(dir, 'pets.json'), 'utf8')).startsWith('{"format":"petstore-pets/4","journal":1,'))
      snapshots++;
  }
  assert.ok(snapshots > 0, 'a snapshot was written while the store ran');
  const generations = (await dataFiles(dir)).filter(isJournalPath).map((name) => Number(name.split('.')[1]));
  assert.ok(Math.max(...generations) > 2, `journals were rotated several times: ${generations.join(', ')}`);
  await store.close();
  assert.deepEqual(errors, []);

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened), created);
});

test('close leaves exactly one compacted pets.json and the empty journal it names, no lock; reopening continues the ids', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  const created: Pet[] = [];
  for (let i = 0; i < 5; i++) created.push(await store.create(newPet(i)));
  await store.close();
  assert.deepEqual((await readdir(dir)).sort(), ['pets-ids.json', 'pets-journal.2.jsonl', 'pets.json']);
  assert.equal(await assertStopped(dir), 2);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText(created, 2));

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened), created);
  const next = await reopened.create(newPet(5));
  assert.equal(next.id, 6);
  await reopened.close();
  assert.deepEqual((await readdir(dir)).sort(), ['pets-ids.json', 'pets-journal.3.jsonl', 'pets.json']);
  assert.equal(await assertStopped(dir), 3);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([...created, next], 3));
});

test('a store closed without pets leaves an empty snapshot and journal, and reopens empty', async (t) => {
  const dir = await dataDir(t);
  await (await FileStore.open(dir)).close();
  assert.deepEqual((await readdir(dir)).sort(), ['pets-ids.json', 'pets-journal.1.jsonl', 'pets.json']);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([], 1));
  await (await FileStore.open(dir)).close();
  assert.equal(await assertStopped(dir), 1, 'a store that wrote nothing rewrites nothing');
  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.equal(reopened.size, 0);
  assert.equal((await reopened.create(newPet(1))).id, 1);
});

test('close waits for pending creates; afterwards create is refused and the store is not ready', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  const pending = Array.from({ length: 20 }, (_, i) => store.create(newPet(i)));
  const closed = store.close();
  const created = await Promise.all(pending);
  await closed;
  assert.equal(store.ready, false);
  await assert.rejects(store.create(newPet(99)), StoreUnavailableError);
  await store.close(); // a second close is harmless

  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened), created);
});

test('open loads a snapshot and replays the journals it names in order, and ignores the journals before it', async (t) => {
  const dir = await dataDir(t);
  const pets: Pet[] = Array.from({ length: 9 }, (_, i) => ({ id: i * 2 + 1, ...newPet(i) }));
  // A compaction that crashed before removing journal 7, which the snapshot covers; 8, 9, 10 follow it
  // (10 sorts before 8 and 9 as text: the order is by number).
  await writeFile(join(dir, 'pets.json'), snapshotText(pets.slice(0, 4), 8));
  await writeFile(join(dir, 'pets-journal.7.jsonl'), journalText(pets.slice(0, 4)));
  // Format 4: each journal's ids go on from the one before (ids between written down as skipped).
  await writeFile(join(dir, 'pets-journal.8.jsonl'), journalText(pets.slice(4, 6), 7));
  await writeFile(join(dir, 'pets-journal.9.jsonl'), journalText(pets.slice(6, 7), 11));
  await writeFile(join(dir, 'pets-journal.10.jsonl'), journalText(pets.slice(7), 13));
  await writeFile(join(dir, 'pets-ids.json'), idsText(17));
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(allPets(store).map(plain), pets.map(plain));
  const next = await store.create(newPet(100));
  assert.equal(next.id, 18);
  // The newest journal is the one appended to.
  assert.equal(await readFile(join(dir, 'pets-journal.10.jsonl'), 'utf8'), journalText([...pets.slice(7), next], 13));
  await store.close();
  assert.equal(await assertStopped(dir), 11);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([...pets, next], 11));
});

test('open reads a directory of format 1, skipping journal lines its snapshot holds, and upgrades it before any create', async (t) => {
  const dir = await dataDir(t);
  const pets: Pet[] = Array.from({ length: 9 }, (_, i) => ({ id: i * 2 + 1, ...newPet(i) }));
  // Format 1 does not say which journals its snapshot covers: journal 8 repeats what pets.json holds.
  await writeFile(join(dir, 'pets.json'), snapshotTextV1(pets.slice(0, 5)));
  await writeFile(join(dir, 'pets-journal.8.jsonl'), legacyJournalText(pets.slice(0, 4)));
  await writeFile(join(dir, 'pets-journal.9.jsonl'), legacyJournalText(pets.slice(3, 7)));
  await writeFile(join(dir, 'pets-journal.10.jsonl'), legacyJournalText(pets.slice(7)));
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(allPets(store).map(plain), pets.map(plain));
  // Upgraded at open: a snapshot of format 3 naming a new, empty journal, and the old journals gone.
  assert.equal(await assertStopped(dir), 11);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText(pets, 11));
  const next = await store.create(newPet(100));
  assert.equal(next.id, 18);
  assert.equal(await readFile(join(dir, 'pets-journal.11.jsonl'), 'utf8'), journalText([next]));
  await store.close();
  assert.equal(await assertStopped(dir), 12);
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText([...pets, next], 12));
});

test('open reads a directory of format 1 that has journals only, from journal 1 on', async (t) => {
  const dir = await dataDir(t);
  const pets: Pet[] = Array.from({ length: 4 }, (_, i) => ({ id: i + 1, ...newPet(i) }));
  await writeFile(join(dir, 'pets-journal.1.jsonl'), legacyJournalText(pets.slice(0, 3)));
  await writeFile(join(dir, 'pets-journal.2.jsonl'), legacyJournalText(pets.slice(3)));
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(allPets(store).map(plain), pets.map(plain));
  assert.equal(await assertStopped(dir), 3);
  assert.equal((await store.create(newPet(5))).id, 5);
});

test('a torn last journal line is not corruption: it is dropped and cut, and the next create starts a clean line', async (t) => {
  const dir = await dataDir(t);
  const pets: Pet[] = [
    { id: 1, ...newPet(1) },
    { id: 2, ...newPet(2) },
  ];
  const journal = join(dir, 'pets-journal.1.jsonl');
  await writeFile(join(dir, 'pets.json'), snapshotText([], 1));
  await writeFile(journal, `${journalText(pets)}[{"id":3,"name":"half a p`);
  await writeFile(join(dir, 'pets-ids.json'), idsText(2, false));
  const repairs: string[] = [];
  const store = await FileStore.open(dir, { onRepair: (message) => repairs.push(message) });
  defer(t, () => store.close());
  assert.deepEqual(repairs, [
    `unclean stop (a crash, kill -9 or a power loss) of ${dir}: its records end at pet 2; new ids continue from 4, past every id reserved before the stop (pets-ids.json), as any of them may have reached a client`,
    `cut the last 25 bytes of ${journal}, after its last complete line: an append a crash cut short, never acknowledged`,
  ]);
  assert.deepEqual(allPets(store).map(plain), pets.map(plain));
  assert.equal(await readFile(journal, 'utf8'), journalText(pets), 'the torn line is cut at open');
  const next = await store.create(newPet(3));
  assert.equal(next.id, 4, "the torn line's id is not handed out again: torn bytes and damaged ones can look alike");
  assert.equal(await readFile(journal, 'utf8'), journalText([...pets, next]));
});

test('a torn line of non-UTF-8 bytes at the end of the journal is dropped too', async (t) => {
  const dir = await dataDir(t);
  const pets: Pet[] = [{ id: 1, ...newPet(1) }];
  const journal = join(dir, 'pets-journal.1.jsonl');
  await writeFile(join(dir, 'pets.json'), snapshotText([], 1));
  await writeFile(
    journal,
    Buffer.concat([Buffer.from(journalText(pets)), Buffer.from([0x5b, 0x7b, 0xff, 0xfe, 0xc3])]),
  );
  await writeFile(join(dir, 'pets-ids.json'), idsText(1, false));
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(allPets(store).map(plain), pets.map(plain));
  assert.equal((await store.create(newPet(2))).id, 3);
  // The pet's line, the skip line for id 2 that the torn line may have held, the new pet's line.
  assert.equal((await readFile(journal)).toString('utf8').split('\n').length, 4);
});

test('a second open of the same directory is refused while the first holds it, and allowed after close', async (t) => {
  const dir = await dataDir(t);
  const first = await FileStore.open(dir);
  defer(t, () => first.close());
  await first.create(newPet(1));
  const lock = await readlink(join(dir, 'petstore.lock'));
  await assert.rejects(FileStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError, String(error));
    assert.match(error.message, /another server/);
    assert.match(error.message, /petstore\.lock/);
    return true;
  });
  // The refused open changed nothing: the first store still works and holds the lock.
  assert.equal(first.ready, true);
  await first.create(newPet(2));
  assert.equal(await readlink(join(dir, 'petstore.lock')), lock, 'the lock is as the first store made it');
  await first.close();

  const second = await FileStore.open(dir);
  defer(t, () => second.close());
  assert.equal(second.size, 2);
});

test('a lock left by a process that no longer runs is taken over', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'petstore.lock'), `${DEAD_PID}\n`); // as an earlier version left it: a regular file
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.match(await readlink(join(dir, 'petstore.lock')), new RegExp(`^${process.pid} `));
  assert.equal((await store.create(newPet(1))).id, 1);
});

test('a lock naming this process, left by an earlier run that had the same pid, is taken over', async (t) => {
  // In a container the server is often pid 1 on every start: after a kill -9 the stale lock names
  // the new server's own pid. No store in this process holds the directory, so the lock is stale.
  const dir = await dataDir(t);
  await writeFile(join(dir, 'petstore.lock'), `${process.pid}\n`);
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.equal(store.ready, true);
});

test('a hand-edited pets.json in another layout is still read, of format 1 and 2', async (t) => {
  const pets: Pet[] = [
    { id: 1, name: 'Rex', categoryId: 7n },
    { id: 5, name: 'Tom "T"', categoryId: -3n, status: 'sold' },
  ];
  const layouts = [
    // Pretty-printed.
    `{\n  "format": "petstore-pets/1",\n  "pets": [\n    { "id": 1, "name": "Rex", "categoryId": 7 },\n    { "status": "sold", "id": 5, "name": "Tom \\"T\\"", "categoryId": -3 }\n  ]\n}\n`,
    `{\n  "pets": [\n    { "id": 1, "name": "Rex", "categoryId": 7 },\n    { "status": "sold", "id": 5, "name": "Tom \\"T\\"", "categoryId": -3 }\n  ],\n  "journal": 1, "format": "petstore-pets/2"\n}\n`,
    // The store's own first line, then two pets on one line.
    `{"format":"petstore-pets/1","pets":[\n${petJson(pets[0] as Pet)}, ${petJson(pets[1] as Pet)}\n]}\n`,
    `{"format":"petstore-pets/2","journal":1,"pets":[\n${petJson(pets[0] as Pet)}, ${petJson(pets[1] as Pet)}\n]}\n`,
    // The store's own first line, then one pet spread over several lines.
    `{"format":"petstore-pets/1","pets":[\n${petJson(pets[0] as Pet)},\n{\n"id":5,\n"name":"Tom \\"T\\"","categoryId":-3,"status":"sold"}\n]}\n`,
  ];
  for (const layout of layouts) {
    const dir = await dataDir(t);
    await writeFile(join(dir, 'pets.json'), layout);
    if (layout.includes('petstore-pets/2')) await writeFile(join(dir, 'pets-journal.1.jsonl'), '');
    const store = await FileStore.open(dir);
    defer(t, () => store.close());
    try {
      assert.deepEqual(allPets(store).map(plain), pets.map(plain), layout);
    } finally {
      await store.close();
    }
  }
});

test('ids are reserved a block ahead in the background: a create that finds its id reserved never waits for that write, and costs one journal fdatasync', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  // The first create reserved ids 1–1025 (pets-ids.json).
  await store.create(newPet(0));
  assert.match(
    await readFile(join(dir, 'pets-ids.json'), 'utf8'),
    /^\{"format":"petstore-ids\/1","reserved":1025,"stopped":false,"crc":"[0-9a-f]{8}"\}\n$/,
  );
  // From now on every write of pets-ids.json hangs until released.
  let release = (): void => undefined;
  const held = new Promise<undefined>((resolve) => (release = () => resolve(undefined)));
  fs.hook = (call) => (call.op === 'datasync' && call.path.includes('.pets-ids.json.') ? held : undefined);
  const before = fs.count('datasync', isJournalPath);
  const logged = fs.log.length;
  // Once fewer than half a block are left (at id 514) the next block is reserved in the background: up to 1025 + 1024.
  for (let i = 2; i <= 1000; i++)
    await within(store.create(newPet(i)), 5000, `create ${i} while the reservation is written`);
  assert.equal(fs.count('datasync', isJournalPath) - before, 999, 'one fdatasync per create committed alone');
  assert.equal(
    fs.log.slice(logged).filter((entry) => entry === 'open .pets-ids.json.*.tmp').length,
    1,
    'one reservation write begun for the block',
  );
  release();
  await waitFor(
    () => fs.log.slice(logged).includes('rename .pets-ids.json.*.tmp -> pets-ids.json'),
    5000,
    'the reservation written',
  );
  assert.match(await readFile(join(dir, 'pets-ids.json'), 'utf8'), /"reserved":2049,"stopped":false/);
  await store.close();
  assert.match(
    await readFile(join(dir, 'pets-ids.json'), 'utf8'),
    /"reserved":1000,"stopped":true/,
    'a clean stop says where ids go on',
  );
});
