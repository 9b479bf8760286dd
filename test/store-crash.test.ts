import assert from 'node:assert/strict';
import { cp, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreUnavailableError } from '#dist/store/store.js';
import type { NewPet, Pet } from '#dist/pet/pet.js';
import { TEST_KEY, request, spawnServer, within, type ServerProcess } from './support.js';
import {
  Crash,
  TestFileSystem,
  assertStopped,
  deadLock,
  dataDir,
  dataFiles,
  defer,
  isJournalPath,
  isTempPath,
  journalText,
  plain,
  type Call,
} from './store-support.js';

function newPet(i: number): NewPet {
  const pet = { name: `pet ${i} ${'·'.repeat(i % 5)}`, categoryId: BigInt(i) * 7919n - 50_000n };
  return i % 4 === 0 ? pet : { ...pet, status: (['available', 'pending', 'sold'] as const)[i % 3] ?? 'sold' };
}

const allPets = (store: FileStore): Pet[] => [...store.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets];
const byId = (a: Pet, b: Pet): number => a.id - b.id;

/** A fresh, not yet existing directory to copy a crashed data directory to. */
async function copyTarget(t: TestContext): Promise<string> {
  return join(await dataDir(t), 'after-crash');
}

/**
 * Opens the crash copy as a restarted server would and checks that it holds exactly `acknowledged`,
 * that open removed any temp snapshot, and that ids continue above the largest.
 */
async function assertRecovered(
  t: TestContext,
  copy: string,
  acknowledged: readonly Pet[],
  tempLeft: boolean,
): Promise<void> {
  assert.equal(
    (await dataFiles(copy)).some(isTempPath),
    tempLeft,
    `a temp snapshot is${tempLeft ? '' : ' not'} in the copy: ${(await dataFiles(copy)).join(' ')}`,
  );
  // The ids reserved before the crash (pets-ids.json): any of them may have been handed out.
  const reserved = Number(
    /"reserved":(\d+),"stopped":false/.exec(await readFile(join(copy, 'pets-ids.json'), 'utf8'))?.[1],
  );
  const store = await FileStore.open(copy);
  defer(t, () => store.close());
  assert.deepEqual(allPets(store).map(plain), [...acknowledged].sort(byId).map(plain));
  assert.deepEqual((await readdir(copy)).filter(isTempPath), [], 'open removed the temp snapshot');
  const maxId = Math.max(0, ...acknowledged.map((p) => p.id));
  const next = await store.create(newPet(999));
  assert.ok(reserved >= maxId, `every acknowledged id was reserved: ${reserved}`);
  assert.equal(next.id, reserved + 1, 'new ids start past the reservation');
  await store.close();

  const again = await FileStore.open(copy);
  defer(t, () => again.close());
  assert.deepEqual(allPets(again).map(plain), [...acknowledged, next].sort(byId).map(plain));
}

const isNewJournalOpen = (call: Call | undefined): boolean =>
  call !== undefined &&
  call.op === 'open' &&
  call.flags === 'wx' &&
  isJournalPath(call.path) &&
  !call.path.endsWith('.1.jsonl');

/** Crash points in a background compaction. `holdsCommits`: creates wait while the point is held. */
const COMPACTION_CRASHES: ReadonlyArray<{
  point: string;
  at: (call: Call, done: readonly Call[]) => boolean;
  holdsCommits: boolean;
  tempLeft: boolean;
}> = [
  {
    point: 'after the next journal is created, before the directory sync',
    at: (c, done) => c.op === 'syncDir' && isNewJournalOpen(done.at(-1)),
    holdsCommits: true,
    tempLeft: false,
  },
  {
    point: 'after the temp write, before its fdatasync',
    at: (c) => c.op === 'datasync' && isTempPath(c.path),
    holdsCommits: false,
    tempLeft: true,
  },
  {
    point: 'before the rename',
    at: (c) => c.op === 'rename' && isTempPath(c.path),
    holdsCommits: false,
    tempLeft: true,
  },
  {
    point: 'after the rename, before the directory sync',
    at: (c, done) => c.op === 'syncDir' && done.some((d) => d.op === 'rename' && isTempPath(d.path)),
    holdsCommits: false,
    tempLeft: false,
  },
  {
    point: 'before the journal is cut',
    at: (c) => c.op === 'unlink' && isJournalPath(c.path),
    holdsCommits: false,
    tempLeft: false,
  },
];

for (const { point, at, holdsCommits, tempLeft } of COMPACTION_CRASHES) {
  test(`a crash during compaction ${point} recovers exactly the acknowledged pets`, async (t) => {
    const dir = await dataDir(t);
    const copy = await copyTarget(t);
    let opened = -1; // the open writes a snapshot of its own: only what follows it counts
    const crash = new Crash(dir, (call, done) => opened >= 0 && at(call, done.slice(opened)));
    const store = await FileStore.open(dir, { fileSystem: crash.fileSystem, compactAfterBytes: 200 });
    opened = crash.fileSystem.done.length;
    const acknowledged: Pet[] = [];
    let reached = false;
    void crash.reached.then(() => (reached = true));
    let last: Promise<void> = Promise.resolve();
    for (let i = 1; i <= 50 && !reached; i++) {
      last = store.create(newPet(i)).then((pet) => void acknowledged.push(pet));
      await within(Promise.race([last, crash.reached]), 5000, 'a create or the crash point');
    }
    assert.ok(reached, 'the crash point was reached');
    if (!holdsCommits) {
      // Creates go on into the new journal while the compaction is held at the crash point.
      await last;
      for (let i = 101; i <= 103; i++) acknowledged.push(await store.create(newPet(i)));
    }
    await crash.crash(copy);
    await assertRecovered(t, copy, acknowledged, tempLeft);
  });
}

/** Crash points in the snapshot that close writes. */
const CLOSE_CRASHES: ReadonlyArray<{
  point: string;
  at: (call: Call, done: readonly Call[]) => boolean;
  tempLeft: boolean;
}> = [
  {
    point: 'after the temp write, before its fdatasync',
    at: (c) => c.op === 'datasync' && isTempPath(c.path),
    tempLeft: true,
  },
  { point: 'before the rename', at: (c) => c.op === 'rename' && isTempPath(c.path), tempLeft: true },
  {
    point: 'after the rename, before the directory sync',
    at: (c, done) => c.op === 'syncDir' && done.some((d) => d.op === 'rename' && isTempPath(d.path)),
    tempLeft: false,
  },
  { point: 'before the journal is cut', at: (c) => c.op === 'unlink' && isJournalPath(c.path), tempLeft: false },
  {
    point: 'after the journal is cut, before the directory sync',
    at: (c, done) => c.op === 'syncDir' && done.at(-1)?.op === 'unlink',
    tempLeft: false,
  },
];

for (const { point, at, tempLeft } of CLOSE_CRASHES) {
  test(`a crash while close writes its snapshot ${point} recovers exactly the acknowledged pets`, async (t) => {
    const dir = await dataDir(t);
    const copy = await copyTarget(t);
    let opened = -1; // the open writes a snapshot of its own: only what follows it counts
    const crash = new Crash(dir, (call, done) => opened >= 0 && at(call, done.slice(opened)));
    const store = await FileStore.open(dir, { fileSystem: crash.fileSystem });
    opened = crash.fileSystem.done.length;
    const acknowledged = await Promise.all(Array.from({ length: 12 }, (_, i) => store.create(newPet(i))));
    void store.close(); // never finishes: the machine goes down during it
    await within(crash.reached, 5000, 'the crash point');
    await crash.crash(copy);
    await assertRecovered(t, copy, acknowledged, tempLeft);
  });
}

test('a crash between a journal write and its fdatasync keeps every acknowledged pet; the unacknowledged one may survive whole', async (t) => {
  const dir = await dataDir(t);
  const copy = await copyTarget(t);
  let armed = false;
  const crash = new Crash(dir, (c) => armed && c.op === 'datasync' && isJournalPath(c.path));
  const store = await FileStore.open(dir, { fileSystem: crash.fileSystem });
  const acknowledged: Pet[] = [];
  for (let i = 1; i <= 5; i++) acknowledged.push(await store.create(newPet(i)));
  armed = true;
  let answered = false;
  void store.create(newPet(6)).finally(() => (answered = true));
  await within(crash.reached, 5000, 'the crash point');
  await crash.crash(copy);
  assert.equal(answered, false);

  const reserved = Number(/"reserved":(\d+)/.exec(await readFile(join(copy, 'pets-ids.json'), 'utf8'))?.[1]);
  const reopened = await FileStore.open(copy);
  defer(t, () => reopened.close());
  const pets = allPets(reopened);
  assert.deepEqual(pets.slice(0, 5), acknowledged);
  assert.ok(pets.length <= 6);
  if (pets.length === 6) assert.deepEqual(plain(pets[5] as Pet), plain({ id: 6, ...newPet(6) }));
  // Id 6 may have been seen by its client (a pet whose line was written but not fdatasync'ed can be lost): never again.
  assert.equal((await reopened.create(newPet(7))).id, reserved + 1);
  assert.ok(reserved >= 6);
});

test('a crash in the middle of an append leaves a torn line that is cut at start; the next create appends cleanly', async (t) => {
  const dir = await dataDir(t);
  const copy = await copyTarget(t);
  const fs = new TestFileSystem();
  let tear = false;
  // Half a line reaches the journal, and the disk then refuses the cut-back too (so the torn line stays).
  fs.hook = (call) => {
    if (!tear || !isJournalPath(call.path)) return undefined;
    if (call.op === 'write') return { code: 'EIO', partial: true };
    return call.op === 'truncate' ? { code: 'EIO' } : undefined;
  };
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  const acknowledged: Pet[] = [];
  for (let i = 1; i <= 4; i++) acknowledged.push(await store.create(newPet(i)));
  tear = true;
  await assert.rejects(store.create(newPet(5)), StoreUnavailableError);
  // The machine goes down now, with half a line in the journal.
  await cp(dir, copy, { recursive: true, verbatimSymlinks: true });
  await deadLock(copy);
  const journal = join(copy, 'pets-journal.1.jsonl');
  const torn = await readFile(journal, 'utf8');
  assert.ok(!torn.endsWith('\n') && torn.startsWith(journalText(acknowledged)), 'the copy ends in a torn line');

  const reopened = await FileStore.open(copy);
  defer(t, () => reopened.close());
  assert.deepEqual(allPets(reopened), acknowledged);
  const next = await reopened.create(newPet(6));
  assert.ok(next.id > 4);
  assert.equal(await readFile(journal, 'utf8'), journalText([...acknowledged, next]));
});

// --- The real server, stopped and killed --------------------------------------------------------

const ENV = { PETSTORE_API_KEYS: TEST_KEY };

async function start(t: TestContext, dir: string): Promise<ServerProcess> {
  const server = await spawnServer(['--data-dir', dir], ENV);
  defer(t, () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    return server.exited;
  });
  return server;
}

function post(url: string, body: Record<string, unknown>): ReturnType<typeof request> {
  return request(url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify(body),
  });
}

/** Every pet the server lists, paging with the `after` cursor. */
async function listAll(url: string): Promise<Array<Record<string, unknown>>> {
  const pets: Array<Record<string, unknown>> = [];
  for (;;) {
    const after = pets.length === 0 ? 0 : Number(pets.at(-1)?.id);
    const page = await request(url, 'GET', `/v1/pets?limit=100&after=${after}`);
    assert.equal(page.status, 200, page.text);
    const body = page.json as Array<Record<string, unknown>>;
    pets.push(...body);
    if (page.headers.link === undefined) return pets;
  }
}

test('a server stopped with SIGTERM and started again on its data directory has every pet, ids continue, and stopping leaves one pets.json and its empty journal', {
  timeout: 120_000,
}, async (t) => {
  const dir = await dataDir(t);
  const first = await start(t, dir);
  const created: unknown[] = [];
  for (let i = 0; i < 3; i++) created.push((await post(first.url, { name: `seq ${i}`, categoryId: i })).json);
  const concurrent = await Promise.all(
    Array.from({ length: 5 }, (_, i) => post(first.url, { name: `par ${i}`, categoryId: -i, status: 'sold' })),
  );
  for (const res of concurrent) assert.equal(res.status, 201);
  created.push(...concurrent.map((res) => res.json));
  first.child.kill('SIGTERM');
  assert.equal(await first.exited, 0);
  assert.deepEqual((await readdir(dir)).sort(), ['pets-ids.json', 'pets-journal.2.jsonl', 'pets.json']);

  const second = await start(t, dir);
  const listed = await listAll(second.url);
  assert.deepEqual(
    listed,
    [...(created as Array<{ id: number }>)].sort((a, b) => a.id - b.id),
  );
  const next = await post(second.url, { name: 'after restart', categoryId: 9 });
  assert.equal(next.status, 201);
  assert.equal((next.json as { id: number }).id, 9);
  assert.equal((await request(second.url, 'GET', '/v1/pets/9')).status, 200);
  second.child.kill('SIGTERM');
  assert.equal(await second.exited, 0);
  assert.deepEqual((await readdir(dir)).sort(), ['pets-ids.json', 'pets-journal.3.jsonl', 'pets.json']);
  assert.equal(await assertStopped(dir), 3);
  assert.match(await readFile(join(dir, 'pets.json'), 'utf8'), /"name":"after restart"/);
});

/** A small deterministic generator (mulberry32), so that every run kills at the same counts. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

// Bounded by its 8 rounds; the timeout only stops a hang, however busy the machine is.
test('kill -9 during concurrent creates, round after round, never loses an acknowledged pet nor reuses an id', {
  timeout: 180_000,
}, async (t) => {
  const dir = await dataDir(t);
  const next = random(0x5eed);
  /** Every 201 body ever received, by id. */
  const acknowledged = new Map<number, Record<string, unknown>>();

  const verify = async (url: string): Promise<number> => {
    const listed = await listAll(url);
    const ids = listed.map((p) => Number(p.id));
    assert.deepEqual(
      ids,
      [...new Set(ids)].sort((a, b) => a - b),
      'ids are unique and ascending',
    );
    const byListedId = new Map(listed.map((p) => [Number(p.id), p]));
    for (const [id, pet] of acknowledged)
      assert.deepEqual(byListedId.get(id), pet, `acknowledged pet ${id} survived exactly`);
    return Math.max(0, ...ids);
  };

  for (let round = 0; round < 8; round++) {
    const server = await start(t, dir);
    const floor = await verify(server.url);
    const killAfter = 3 + Math.floor(next() * 40);
    let acks = 0;
    let killed = false;
    const client = async (c: number): Promise<void> => {
      for (let n = 0; !killed; n++) {
        const body = {
          name: `round ${round} client ${c} #${n}`,
          categoryId: round * 1_000_000 + c * 1000 + n,
          ...(n % 2 === 0 ? { status: 'pending' } : {}),
        };
        let res;
        try {
          res = await post(server.url, body);
        } catch (error) {
          if (killed) return; // the request was cut off by the kill: never acknowledged
          throw error;
        }
        assert.equal(res.status, 201, res.text);
        const pet = res.json as Record<string, unknown>;
        const id = Number(pet.id);
        assert.deepEqual(pet, { id, ...body });
        assert.ok(id > floor, `id ${id} is above every id the server had at start (${floor})`);
        assert.ok(!acknowledged.has(id), `id ${id} was not given out before`);
        acknowledged.set(id, pet);
        if (++acks === killAfter) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, (_, c) => client(c)));
    assert.equal(await server.exited, null, 'the server was killed');
  }

  const last = await start(t, dir);
  const floor = await verify(last.url);
  const after = await post(last.url, { name: 'survivor', categoryId: 1 });
  assert.equal(after.status, 201);
  // Past the ids reserved before the kill: a gap of at most a block and a half (1,536) and the ids in flight.
  const afterId = (after.json as { id: number }).id;
  assert.ok(afterId > floor + 1 && afterId <= floor + 1536 + 16, `id ${afterId} after ${floor}`);
  last.child.kill('SIGTERM');
  assert.equal(await last.exited, 0);
  assert.equal((await readdir(dir)).includes('petstore.lock'), false);
  await assertStopped(dir);
  assert.ok(acknowledged.size >= 8 * 3);
});
