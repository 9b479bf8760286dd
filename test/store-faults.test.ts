import assert from 'node:assert/strict';
import { chmod, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError, StoreUnavailableError } from '#dist/store/store.js';
import type { NewPet, Pet } from '#dist/pet/pet.js';
import { startServer, waitFor } from './support.js';
import {
  TestFileSystem,
  assertStopped,
  dataDir,
  dataFiles,
  defer,
  fileBytes,
  isJournalPath,
  isTempPath,
  journalText,
  plain,
  snapshotText,
  type Call,
  type Fault,
} from './store-support.js';

function newPet(i: number): NewPet {
  return i % 3 === 0
    ? { name: `pet ${i}`, categoryId: BigInt(i) }
    : { name: `pet ${i}`, categoryId: BigInt(-i), status: 'pending' };
}

const allPets = (store: FileStore): Pet[] => [...store.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets];

/** Opens the store in `dir` again with the real file system and returns what it holds. */
async function reopenedPets(t: TestContext, dir: string): Promise<Pet[]> {
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  return allPets(store);
}

/** A TestFileSystem that fails every journal call of kind `op` while `failing.on`. */
function failingJournal(op: Call['op'], fault: Fault): { fs: TestFileSystem; failing: { on: boolean } } {
  const fs = new TestFileSystem();
  const failing = { on: false };
  fs.hook = (call) => (failing.on && call.op === op && isJournalPath(call.path) ? fault : undefined);
  return { fs, failing };
}

const JOURNAL_FAULTS: ReadonlyArray<{ what: string; op: Call['op']; fault: Fault }> = [
  { what: 'fdatasync fails with EIO', op: 'datasync', fault: { code: 'EIO' } },
  { what: 'the write fills the disk half-way (ENOSPC)', op: 'write', fault: { code: 'ENOSPC', partial: true } },
  { what: 'the write fails with EIO', op: 'write', fault: { code: 'EIO' } },
];

for (const { what, op, fault } of JOURNAL_FAULTS) {
  test(`when ${what}, the waiting creates are refused, nothing of them is kept, and the next create after the disk recovers succeeds`, async (t) => {
    const dir = await dataDir(t);
    const { fs, failing } = failingJournal(op, fault);
    const store = await FileStore.open(dir, { fileSystem: fs });
    defer(t, () => store.close());
    const acknowledged = [await store.create(newPet(1)), await store.create(newPet(2))];

    failing.on = true;
    // One create commits alone, the next four wait and are committed together as a second batch.
    const results = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => store.create(newPet(100 + i))));
    for (const result of results) {
      assert.equal(result.status, 'rejected');
      assert.ok(result.reason instanceof StoreUnavailableError, String(result.reason));
    }
    assert.equal(store.ready, false);
    assert.deepEqual(allPets(store), acknowledged);
    for (let id = 3; id < 10; id++) assert.equal(store.get(id), undefined, `id ${id}`);
    await assert.rejects(store.create(newPet(6)), StoreUnavailableError);

    failing.on = false;
    const next = await store.create(newPet(7));
    acknowledged.push(next);
    assert.ok(next.id > 2);
    assert.equal(store.ready, true);
    assert.deepEqual(store.get(next.id), next);
    assert.deepEqual(allPets(store), acknowledged);
    // The journal holds the acknowledged lines and nothing of the failed batches.
    assert.equal(await readFile(join(dir, 'pets-journal.1.jsonl'), 'utf8'), journalText(acknowledged));

    acknowledged.push(await store.create(newPet(8)));
    await store.close();
    await assertStopped(dir);
    assert.deepEqual(await reopenedPets(t, dir), acknowledged);
  });

  test(`when ${what} and the store is closed once the disk works again, the disk holds exactly the acknowledged pets`, async (t) => {
    const dir = await dataDir(t);
    const { fs, failing } = failingJournal(op, fault);
    const store = await FileStore.open(dir, { fileSystem: fs });
    defer(t, () => store.close());
    const acknowledged = [await store.create(newPet(1))];
    failing.on = true;
    const refused = await Promise.allSettled([2, 3, 4, 5, 6, 7].map((i) => store.create(newPet(i))));
    assert.ok(refused.every((r) => r.status === 'rejected'));
    failing.on = false;
    await store.close();
    // Every refused client was told its pet was not stored (503): none may appear after a restart.
    assert.deepEqual((await reopenedPets(t, dir)).map(plain), acknowledged.map(plain));
  });
}

test('when the disk keeps failing, close still releases the directory and every acknowledged pet survives', async (t) => {
  const dir = await dataDir(t);
  const { fs, failing } = failingJournal('datasync', { code: 'EIO' });
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  const acknowledged = [await store.create(newPet(1)), await store.create(newPet(2))];
  failing.on = true;
  await assert.rejects(store.create(newPet(3)), StoreUnavailableError);
  await store.close();
  const pets = await reopenedPets(t, dir);
  assert.deepEqual(pets.slice(0, 2), acknowledged);
});

/** Steps of a background compaction, each of which may fail once. */
const COMPACTION_STEPS: ReadonlyArray<{
  step: string;
  fault: Fault;
  at: (call: Call, done: readonly Call[]) => boolean;
}> = [
  {
    step: 'creating the next journal',
    fault: { code: 'ENOSPC' },
    at: (c) => c.op === 'open' && c.flags === 'wx' && isJournalPath(c.path) && !c.path.endsWith('.1.jsonl'),
  },
  {
    step: 'syncing the directory for the next journal',
    fault: { code: 'EIO' },
    at: (c, done) =>
      c.op === 'syncDir' &&
      done.at(-1)?.op === 'open' &&
      isJournalPath(done.at(-1)?.path ?? '') &&
      !(done.at(-1)?.path ?? '').endsWith('.1.jsonl'),
  },
  { step: 'creating the temp snapshot', fault: { code: 'ENOSPC' }, at: (c) => c.op === 'open' && isTempPath(c.path) },
  {
    step: 'writing the temp snapshot',
    fault: { code: 'ENOSPC', partial: true },
    at: (c) => c.op === 'write' && isTempPath(c.path),
  },
  {
    step: 'fdatasync of the temp snapshot',
    fault: { code: 'EIO' },
    at: (c) => c.op === 'datasync' && isTempPath(c.path),
  },
  { step: 'closing the temp snapshot', fault: { code: 'EIO' }, at: (c) => c.op === 'close' && isTempPath(c.path) },
  { step: 'renaming it over pets.json', fault: { code: 'EIO' }, at: (c) => c.op === 'rename' && isTempPath(c.path) },
  {
    step: 'syncing the directory after the rename',
    fault: { code: 'EIO' },
    at: (c, done) => c.op === 'syncDir' && done.some((d) => d.op === 'rename' && isTempPath(d.path)),
  },
  { step: 'removing a covered journal', fault: { code: 'EIO' }, at: (c) => c.op === 'unlink' && isJournalPath(c.path) },
];

for (const { step, fault, at } of COMPACTION_STEPS) {
  test(`a compaction that fails at ${step} is reported, costs no pet, and a later compaction succeeds`, async (t) => {
    const dir = await dataDir(t);
    const fs = new TestFileSystem();
    let failedAt = -1;
    let opened = -1; // the open writes a snapshot of its own: only what follows it counts
    fs.hook = (call) => {
      if (failedAt >= 0 || opened < 0 || !at(call, fs.done.slice(opened))) return undefined;
      failedAt = fs.log.length;
      return fault;
    };
    const errors: unknown[] = [];
    const store = await FileStore.open(dir, {
      fileSystem: fs,
      compactAfterBytes: 100,
      onBackgroundError: (error) => errors.push(error),
    });
    defer(t, () => store.close());
    opened = fs.done.length;
    const created: Pet[] = [];
    let compactedAfterFailure = false;
    for (let i = 0; i < 300 && !compactedAfterFailure; i++) {
      created.push(await store.create(newPet(i)));
      assert.equal(store.ready, true, 'a failed compaction does not stop creates');
      compactedAfterFailure =
        failedAt >= 0 && fs.log.slice(failedAt + 1).some((entry) => /^unlink pets-journal\.\d+\.jsonl$/.test(entry));
    }
    assert.ok(failedAt >= 0, 'the step was reached');
    assert.ok(
      errors.some((error) => (error as NodeJS.ErrnoException).code === fault.code),
      `the failure was reported: ${errors.map(String).join('; ')}`,
    );
    assert.ok(
      compactedAfterFailure,
      `a later compaction completed and cut its journals:\n${fs.log.slice(failedAt).join('\n')}`,
    );
    assert.deepEqual(allPets(store), created);
    await store.close();
    await assertStopped(dir); // one snapshot, the empty journal it names, no temp file
    assert.deepEqual(await reopenedPets(t, dir), created);
  });
}

test('a failed rotation is not tried again until as much again has been written (back-off on a full disk)', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  const isRotation = (c: Call): boolean =>
    c.op === 'open' && c.flags === 'wx' && isJournalPath(c.path) && !c.path.endsWith('.1.jsonl');
  let attempts = 0;
  fs.hook = (call) => {
    if (!isRotation(call)) return undefined;
    attempts++;
    return attempts === 1 ? { code: 'ENOSPC' } : undefined;
  };
  const store = await FileStore.open(dir, { fileSystem: fs, compactAfterBytes: 400, onBackgroundError: () => {} });
  defer(t, () => store.close());
  let i = 0;
  while (attempts === 0 && i < 100) await store.create(newPet(i++));
  assert.equal(attempts, 1, 'the journal outgrew its bound and a rotation was tried');
  // Each pet line is about 72 bytes: 5 more stay below another 400 bytes, 10 more go past it.
  for (let n = 0; n < 5; n++) await store.create(newPet(i++));
  assert.equal(attempts, 1, 'no new attempt after every commit while the disk is full');
  for (let n = 0; n < 10; n++) await store.create(newPet(i++));
  assert.equal(attempts, 2, 'tried again once as much again was written');
});

test('a journal cut back on a full disk stays not ready until a write succeeds, and is ready again by itself once space returns', async (t) => {
  // Truncating needs no free block, so a cut-back alone proves nothing: readiness must wait for a write.
  const dir = await dataDir(t);
  const { fs, failing } = failingJournal('write', { code: 'ENOSPC' });
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  await store.create(newPet(1));
  failing.on = true;
  await assert.rejects(store.create(newPet(2)), StoreUnavailableError);
  const failedWrites = (): number =>
    fs.log.filter((entry) => /^write pets-journal\.1\.jsonl !ENOSPC$/.test(entry)).length;
  const firstFailures = failedWrites();
  await waitFor(() => failedWrites() > firstFailures, 3000, 'a recovery attempted in the background');
  assert.ok(
    fs.log.some((entry) => entry === 'truncate pets-journal.1.jsonl'),
    'the cut-back itself succeeded',
  );
  assert.equal(store.ready, false, 'not ready while every write still fails');
  failing.on = false;
  await waitFor(() => store.ready, 3000, 'ready again once the disk takes writes');
  assert.equal((await store.create(newPet(3))).id, 3, 'the refused create used up id 2: ids are never reused');
});

const CLOSE_FAULTS: ReadonlyArray<{ step: string; fault: Fault; at: (call: Call) => boolean }> = [
  {
    step: 'writing the temp snapshot',
    fault: { code: 'ENOSPC', partial: true },
    at: (c) => c.op === 'write' && isTempPath(c.path),
  },
  {
    step: 'fdatasync of the temp snapshot',
    fault: { code: 'EIO' },
    at: (c) => c.op === 'datasync' && isTempPath(c.path),
  },
  { step: 'renaming it over pets.json', fault: { code: 'EIO' }, at: (c) => c.op === 'rename' && isTempPath(c.path) },
  { step: 'removing the journal', fault: { code: 'EIO' }, at: (c) => c.op === 'unlink' && isJournalPath(c.path) },
];

for (const { step, fault, at } of CLOSE_FAULTS) {
  test(`a close that fails at ${step} releases the directory and keeps every pet, with no temp file left after reopening`, async (t) => {
    const dir = await dataDir(t);
    const fs = new TestFileSystem();
    let failed = false;
    let opened = false; // the open writes a snapshot of its own
    fs.hook = (call) => {
      if (failed || !opened || !at(call)) return undefined;
      failed = true;
      return fault;
    };
    const store = await FileStore.open(dir, { fileSystem: fs });
    defer(t, () => store.close());
    opened = true;
    const created = await Promise.all([1, 2, 3, 4, 5].map((i) => store.create(newPet(i))));
    await store.close().then(
      () => undefined,
      (error: unknown) => assert.equal((error as NodeJS.ErrnoException).code, fault.code),
    );
    assert.ok(failed, 'the step was reached');
    assert.deepEqual(await reopenedPets(t, dir), created);
    assert.deepEqual((await readdir(dir)).filter(isTempPath), []);
  });
}

test('over HTTP a create that cannot be made durable is a 503 "unavailable", and /readyz is 503 until the store recovers', async (t) => {
  const dir = await dataDir(t);
  const { fs, failing } = failingJournal('datasync', { code: 'EIO' });
  const server = await startServer({ dataDir: dir, store: await FileStore.open(dir, { fileSystem: fs }) });
  defer(t, () => server.stop());
  const post = (name: string): ReturnType<typeof server.request> =>
    server.request('POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: JSON.stringify({ name, categoryId: 1 }),
    });

  assert.equal((await post('before')).status, 201);
  assert.equal((await server.request('GET', '/readyz', { auth: false })).status, 200);
  failing.on = true;
  const refused = await post('lost');
  assert.equal(refused.status, 503);
  assert.equal((refused.json as { code: string }).code, 'unavailable');
  assert.ok(!refused.text.includes('EIO'), 'the internal error is not leaked');
  const notReady = await server.request('GET', '/readyz', { auth: false });
  assert.equal(notReady.status, 503);
  assert.equal((notReady.json as { code: string }).code, 'unavailable');
  // Reads still answer from memory, without the refused pet.
  assert.deepEqual((await server.request('GET', '/v1/pets')).json, [{ id: 1, name: 'before', categoryId: 1 }]);

  failing.on = false;
  const after = await post('after');
  assert.equal(after.status, 201);
  assert.equal((await server.request('GET', '/readyz', { auth: false })).status, 200);
  await server.stop();
  assert.deepEqual(
    (await reopenedPets(t, dir)).map((p) => p.name),
    ['before', 'after'],
  );
});

test('/readyz turns 200 again once the disk works, without waiting for a create', async (t) => {
  // A readiness probe that stays 503 until the next write would keep the instance out of the load
  // balancer for good: no write ever reaches it again.
  const dir = await dataDir(t);
  const { fs, failing } = failingJournal('datasync', { code: 'EIO' });
  const server = await startServer({ dataDir: dir, store: await FileStore.open(dir, { fileSystem: fs }) });
  defer(t, () => server.stop());
  failing.on = true;
  const refused = await server.request('POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: '{"name":"lost","categoryId":1}',
  });
  assert.equal(refused.status, 503);
  assert.equal((await server.request('GET', '/readyz', { auth: false })).status, 503);
  failing.on = false;
  let status = 0;
  for (let attempt = 0; attempt < 30 && status !== 200; attempt++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    status = (await server.request('GET', '/readyz', { auth: false })).status;
  }
  assert.equal(status, 200, '/readyz within 3 s of the disk recovering');
});

// --- Data that cannot be used at start ---------------------------------------------------------

const pet1 = '{"id":1,"name":"Rex","categoryId":7}';
const pet2 = '{"id":2,"name":"Tom","categoryId":-9223372036854775808,"status":"sold"}';
const pet3 = '{"id":3,"name":"Kit","categoryId":3}';
const snapshot = (...pets: string[]): string => `{"format":"petstore-pets/1","pets":[\n${pets.join(',\n')}\n]}\n`;
const badPetInSnapshot = (pet: string): Record<string, string> => ({ 'pets.json': snapshot(pet1, pet) });

const BAD_DATA: ReadonlyArray<{ what: string; files: Record<string, string | Buffer>; names: string }> = [
  { what: 'pets.json that is not JSON', files: { 'pets.json': snapshot(pet1, pet2).slice(0, 60) }, names: 'pets.json' },
  { what: 'an empty pets.json', files: { 'pets.json': '' }, names: 'pets.json' },
  {
    what: 'pets.json of another format',
    files: { 'pets.json': '{"format":"something-else/2","pets":[]}' },
    names: 'pets.json',
  },
  {
    what: 'pets.json of format 2 without its journal generation',
    files: { 'pets.json': '{"format":"petstore-pets/2","pets":[]}' },
    names: 'pets.json',
  },
  {
    what: 'pets.json of format 2 with a journal generation 0',
    files: { 'pets.json': '{"format":"petstore-pets/2","journal":0,"pets":[]}', 'pets-journal.0.jsonl': '' },
    names: 'pets.json',
  },
  { what: 'pets.json that is a bare array', files: { 'pets.json': `[${pet1}]` }, names: 'pets.json' },
  {
    what: 'pets.json without a pets array',
    files: { 'pets.json': '{"format":"petstore-pets/1","pets":{}}' },
    names: 'pets.json',
  },
  {
    what: 'a pet with an empty name',
    files: badPetInSnapshot('{"id":2,"name":"","categoryId":1}'),
    names: 'pets.json',
  },
  {
    what: 'a pet whose categoryId is a string',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":"1"}'),
    names: 'pets.json',
  },
  {
    what: 'a pet whose categoryId is beyond int64',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":9223372036854775808}'),
    names: 'pets.json',
  },
  {
    what: 'a pet with an unknown field',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":1,"owner":"me"}'),
    names: 'pets.json',
  },
  {
    what: 'a pet with an unknown status',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":1,"status":"lost"}'),
    names: 'pets.json',
  },
  { what: 'a pet without an id', files: badPetInSnapshot('{"name":"a","categoryId":1}'), names: 'pets.json' },
  {
    what: 'a pet with id 0',
    files: { 'pets.json': snapshot('{"id":0,"name":"a","categoryId":1}') },
    names: 'pets.json',
  },
  {
    what: 'a pet with a fractional id',
    files: badPetInSnapshot('{"id":2.5,"name":"a","categoryId":1}'),
    names: 'pets.json',
  },
  {
    what: 'a pet with an id beyond 2^53',
    files: badPetInSnapshot('{"id":9007199254740993,"name":"a","categoryId":1}'),
    names: 'pets.json',
  },
  { what: 'pets out of id order', files: { 'pets.json': snapshot(pet2, pet1) }, names: 'pets.json' },
  { what: 'two pets with one id', files: { 'pets.json': snapshot(pet1, pet1) }, names: 'pets.json' },
  {
    what: 'a pets.json cut off at the end of a line',
    files: { 'pets.json': `{"format":"petstore-pets/1","pets":[\n${pet1},\n` },
    names: 'pets.json',
  },
  {
    what: 'a trailing comma after the last pet',
    files: { 'pets.json': `{"format":"petstore-pets/1","pets":[\n${pet1},\n]}\n` },
    names: 'pets.json',
  },
  { what: 'data after the end of pets.json', files: { 'pets.json': `${snapshot(pet1)}{}\n` }, names: 'pets.json' },
  {
    what: 'a pet name longer than 256 characters',
    files: badPetInSnapshot(`{"id":2,"name":"${'x'.repeat(257)}","categoryId":1}`),
    names: 'pets.json',
  },
  {
    what: 'a pet name with a raw control character',
    files: badPetInSnapshot('{"id":2,"name":"a\u0001b","categoryId":1}'),
    names: 'pets.json',
  },
  {
    what: 'a categoryId of minus zero',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":-0}'),
    names: 'pets.json',
  },
  {
    what: 'a categoryId with a leading zero',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":07}'),
    names: 'pets.json',
  },
  {
    what: 'an id with a leading zero',
    files: badPetInSnapshot('{"id":02,"name":"a","categoryId":7}'),
    names: 'pets.json',
  },
  {
    what: 'data after a pet on its line',
    files: badPetInSnapshot('{"id":2,"name":"a","categoryId":7}x'),
    names: 'pets.json',
  },
  {
    what: 'non-UTF-8 bytes in pets.json',
    files: { 'pets.json': Buffer.from(snapshot(pet1).replace('Rex', 'R\u00ffx'), 'latin1') },
    names: 'pets.json',
  },
  {
    what: 'a corrupt line in the middle of the journal',
    files: { 'pets-journal.1.jsonl': `${pet1}\n{"id":2,"name":"To\n${pet3}\n` },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'a complete but corrupt last journal line',
    files: { 'pets-journal.1.jsonl': `${pet1}\n${pet2}\nxx\n` },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'an empty line in the journal',
    files: { 'pets-journal.1.jsonl': `${pet1}\n\n${pet3}\n` },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'a journal line that is not an object',
    files: { 'pets-journal.1.jsonl': `${pet1}\n[2]\n` },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'a journal pet with a bad field',
    files: { 'pets.json': snapshot(pet1), 'pets-journal.2.jsonl': `${pet2}\n{"id":3,"name":"Kit","categoryId":1.5}\n` },
    names: 'pets-journal.2.jsonl',
  },
  {
    what: 'non-UTF-8 bytes in a journal line',
    files: {
      'pets-journal.1.jsonl': Buffer.concat([
        Buffer.from(`${pet1}\n{"id":2,"name":"`),
        Buffer.from([0xc3, 0x28]),
        Buffer.from(`","categoryId":1}\n${pet3}\n`),
      ]),
    },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'a torn line in a journal that is not the newest',
    files: { 'pets-journal.1.jsonl': `${pet1}\n{"id":2,"na`, 'pets-journal.2.jsonl': `${pet3}\n` },
    names: 'pets-journal.1.jsonl',
  },
  {
    what: 'journal ids that go backwards',
    files: { 'pets-journal.1.jsonl': `${pet1}\n${pet3}\n${pet2}\n` },
    names: 'pets-journal.1.jsonl',
  },
];

/** Opens `dir` expecting a refusal that names `file`, and checks that nothing on disk was changed. */
async function assertRefused(
  dir: string,
  file: string,
  options: Parameters<typeof FileStore.open>[1] = {},
): Promise<void> {
  const before = await fileBytes(dir);
  const listing = (await readdir(dir)).sort();
  const error = await FileStore.open(dir, options).then(
    async (store) => {
      await store.close();
      return assert.fail('open should have refused the data');
    },
    (e: unknown) => e,
  );
  assert.ok(error instanceof StoreOpenError, `a StoreOpenError, not ${String(error)}`);
  assert.ok(error.message.includes(join(dir, file)), `"${error.message}" names ${join(dir, file)}`);
  assert.deepEqual((await readdir(dir)).sort(), listing, 'no file was added or removed, and the lock was released');
  assert.deepEqual(await fileBytes(dir), before, 'every file is byte-for-byte as it was');
}

for (const { what, files, names } of BAD_DATA) {
  test(`open refuses ${what} with a StoreOpenError naming the file, and leaves it untouched`, async (t) => {
    const dir = await dataDir(t);
    for (const [name, content] of Object.entries(files)) await writeFile(join(dir, name), content);
    await assertRefused(dir, names);
  });
}

test('open refuses a pets.json it cannot read (EIO) and leaves the data untouched', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets.json'), snapshot(pet1));
  const fs = new TestFileSystem();
  fs.hook = (call) => (call.op === 'readFile' ? { code: 'EIO' } : undefined);
  await assertRefused(dir, 'pets.json', { fileSystem: fs });
});

test('open refuses a journal it cannot read (EIO) with a StoreOpenError naming it', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets-journal.1.jsonl'), `${pet1}\n`);
  const fs = new TestFileSystem();
  fs.hook = (call) => (call.op === 'readFile' && isJournalPath(call.path) ? { code: 'EIO' } : undefined);
  await assertRefused(dir, 'pets-journal.1.jsonl', { fileSystem: fs });
});

test('open refuses a journal that is a directory with a StoreOpenError naming it', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets.json'), snapshot(pet1));
  await mkdir(join(dir, 'pets-journal.1.jsonl'));
  await assertRefused(dir, 'pets-journal.1.jsonl');
});

test('open refuses a pets.json that is a directory with a StoreOpenError naming it', async (t) => {
  const dir = await dataDir(t);
  await mkdir(join(dir, 'pets.json'));
  await assertRefused(dir, 'pets.json');
});

test('open refuses a data directory it cannot list with a StoreOpenError naming it', async (t) => {
  const dir = await dataDir(t);
  const fs = new TestFileSystem();
  fs.hook = (call) => (call.op === 'readdir' ? { code: 'EIO' } : undefined);
  await assertRefused(dir, '', { fileSystem: fs });
});

test('open refuses a lock file it cannot read with a StoreOpenError naming it', async (t) => {
  const dir = await dataDir(t);
  await mkdir(join(dir, 'petstore.lock'));
  await assertRefused(dir, 'petstore.lock');
});

test('open removes temp snapshots a crash left behind, and nothing else', async (t) => {
  const dir = await dataDir(t);
  await writeFile(join(dir, 'pets.json'), snapshot(pet1));
  await writeFile(join(dir, '.pets.json.0123abcd.tmp'), snapshot(pet1, pet2).slice(0, 50));
  await writeFile(join(dir, 'notes.txt'), 'mine');
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.deepEqual(await dataFiles(dir), ['notes.txt', 'pets-ids.json', 'pets-journal.1.jsonl', 'pets.json']);
  assert.deepEqual(allPets(store).map(plain), [{ id: 1, name: 'Rex', categoryId: '7' }]);
  // The same pet, in the snapshot of format 2 that open writes when it finds one of format 1.
  assert.equal(await readFile(join(dir, 'pets.json'), 'utf8'), snapshotText(allPets(store), 1));
});

// --- A data directory that cannot be used ------------------------------------------------------

test('a data directory that cannot be written gives a StoreOpenError saying so', async (t) => {
  let dir: string;
  if (process.getuid?.() === 0) {
    // chmod does not stop root; sysfs refuses new files even to root.
    const sysDir = '/sys/kernel';
    const isDir = await stat(sysDir).then(
      (s) => s.isDirectory(),
      () => false,
    );
    if (!isDir) return t.skip('running as root without /sys/kernel');
    dir = sysDir;
  } else {
    dir = await dataDir(t);
    await chmod(dir, 0o555);
    defer(t, () => chmod(dir, 0o755));
  }
  await assert.rejects(FileStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError, String(error));
    assert.match(error.message, /not writable/);
    assert.ok(error.message.includes(dir));
    return true;
  });
  return undefined;
});

test('a data directory path that runs through a regular file gives a StoreOpenError naming it', async (t) => {
  const parent = await dataDir(t);
  const file = join(parent, 'a-file');
  await writeFile(file, 'not a directory');
  for (const dir of [file, join(file, 'data')]) {
    await assert.rejects(FileStore.open(dir), (error: unknown) => {
      assert.ok(error instanceof StoreOpenError, String(error));
      assert.ok(error.message.includes(dir), error.message);
      return true;
    });
  }
  assert.equal(await readFile(file, 'utf8'), 'not a directory');
});

test('a data directory where files cannot be created for another reason gives a StoreOpenError naming it', async () => {
  // /proc/self exists, but no file can be created in it (ENOENT).
  await assert.rejects(FileStore.open('/proc/self'), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError, `a StoreOpenError, not ${String(error)}`);
    assert.ok(error.message.includes('/proc/self'), error.message);
    return true;
  });
});

for (const { what, before } of [
  { what: 'a fresh store', before: 0 },
  { what: 'a store whose journal is empty after a clean stop', before: 2 },
]) {
  test(`on ${what}, a clean stop after a refused create (EIO on fdatasync) leaves a directory that starts, handing out ids past the refused one`, async (t) => {
    const dir = await dataDir(t);
    if (before > 0) {
      const first = await FileStore.open(dir);
      for (let i = 1; i <= before; i++) await first.create(newPet(i));
      await first.close();
    }
    const { fs, failing } = failingJournal('datasync', { code: 'EIO' });
    const store = await FileStore.open(dir, { fileSystem: fs });
    defer(t, () => store.close());
    failing.on = true;
    await assert.rejects(store.create(newPet(10)), StoreUnavailableError);
    failing.on = false;
    await store.close();
    await assertStopped(dir);
    const again = await FileStore.open(dir);
    defer(t, () => again.close());
    assert.equal(allPets(again).length, before);
    const next = await again.create(newPet(11));
    assert.ok(next.id > before + 1, `id ${next.id}: the refused create's id ${before + 1} is never handed out again`);
  });
}
