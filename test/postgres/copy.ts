/**
 * The copy of the pets in each instance's memory (pet-copy.ts): filled at start while /readyz says
 * 503, kept current from this instance's commits at once and from other instances' through the
 * commit watch, never skipping a pet nor dropping a catch-up asked for during a read; a pet above
 * the copy's newest is asked of the database; and
 * `--database-reads on` reads the database instead.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { petJson } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { CopyReadError, PetCopy } from '#dist/store/postgres/pet-copy.js';
import { migrate } from '#dist/store/postgres/schema.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { awkwardPets } from '../awkward-pets.js';
import { request, spawnServerFor, startServer, TEST_KEY, waitFor, type TestServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const ENV = { PETSTORE_API_KEYS: TEST_KEY };
const FILLED = 25_000; // two pages of the fill and a half

async function openFilled(
  t: { after(fn: () => Promise<void>): void },
  url: string,
  options = {},
): Promise<PostgresStore> {
  const store = await PostgresStore.open(url, options);
  t.after(() => store.close());
  await waitFor(() => store.ready, 5000, 'the copy filled');
  return store;
}

/** The ids a store lists from memory (a promise would mean it asked the database). */
function listed(store: PostgresStore): number[] {
  const page = store.list({ after: 0, limit: 100 });
  assert.ok(!(page instanceof Promise), 'lists are answered from memory');
  return page.pets.map((p) => p.id);
}

/** A pet committed the way another instance would, but without its NOTIFY (as if it was lost). */
async function insertSilently(sql: ReturnType<typeof connect>, name: string): Promise<number> {
  const [row] = await sql`WITH ids AS (UPDATE petstore.pet_ids SET last_id = last_id + 1 RETURNING last_id)
    INSERT INTO petstore.pets (id, name_json, category_id, status) SELECT last_id, ${JSON.stringify(name)}, 1, NULL FROM ids RETURNING id::int`;
  return row?.id as number;
}

/**
 * A pet committed silently that `store`'s copy has not read when this returns (nothing awaited after the look). The
 * watch's read of the highest id once a second may read one first: then another is committed, five times at most.
 */
async function silentUnheard(
  sql: ReturnType<typeof connect>,
  store: PostgresStore,
  name: string,
): Promise<{ id: number; name: string }> {
  for (let round = 1; round <= 5; round++) {
    const id = await insertSilently(sql, `${name} ${round}`);
    if (!listed(store).includes(id)) return { id, name: `${name} ${round}` };
  }
  assert.fail('five silent pets in a row were read by the once-a-second read before they could be looked at');
}

/** An in-process server on the database, once its copy is filled (/readyz 200). */
async function readyServer(t: { after(fn: () => Promise<void>): void }, url: string): Promise<TestServer> {
  const server = await startServer({ databaseUrl: url });
  t.after(() => server.close());
  const ready = async () => (await server.request('GET', '/readyz', { auth: false })).status === 200;
  await waitFor(ready, 10_000, '/readyz 200 once the copy is filled');
  return server;
}

/** Every page of `server`'s list is, byte for byte, `[petJson,…]` of those pets. */
async function assertListed(server: TestServer, pets: readonly Pet[], what: string): Promise<void> {
  for (let i = 0; i < pets.length; i += 100) {
    const page = pets.slice(i, i + 100);
    const got = await server.request('GET', `/v1/pets?limit=100&after=${i === 0 ? 0 : (pets[i - 1] as Pet).id}`);
    assert.equal(got.text, `[${page.map(petJson).join(',')}]`, `${what}: the page after pet ${i}`);
  }
}

export function copyTests(cluster: () => Cluster): void {
  test("the copy holds petJson's exact bytes, awkward names and all: filled at start in one large page, and read on a pet at a time after commits", {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const reading = await readyServer(t, url); // filled while empty: reads on from each commit heard of
    const writer = await openFilled(t, url, { maxWaitingCreates: 2000 });
    const made = awkwardPets(1200);
    const pets: Pet[] = [];
    // One at a time: the reading instance reads each on alone, a small page, copied into its arena.
    for (const pet of made.slice(0, 40)) pets.push(await writer.create(pet));
    // The rest at once; a new instance's fill reads all of them in one page of over 64 KiB, kept as it is.
    pets.push(...(await Promise.all(made.slice(40).map((pet) => writer.create(pet)))));
    pets.sort((a, b) => a.id - b.id);
    const filled = await readyServer(t, url);
    const last = (pets.at(-1) as Pet).id;
    await assertListed(filled, pets, 'filled at start');
    // A list is answered from the copy (a pet by id above its newest would be asked of the database).
    const readOn = async () => (await reading.request('GET', `/v1/pets?after=${last - 1}`)).text !== '[]';
    await waitFor(readOn, 10_000, 'the reading instance read on to the last pet');
    await assertListed(reading, pets, 'read on after commits');
    for (const pet of pets.slice(0, 40))
      assert.equal((await reading.request('GET', `/v1/pets/${pet.id}`)).text, petJson(pet), `pet ${pet.id}`);
  });

  test("a pet just created through one instance is read on another at once: above the copy's newest, getPet asks the database; lists have it once heard of", {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const one = await openFilled(t, url);
    const other = await openFilled(t, url);
    const sql = connect(t, url);
    // Committed elsewhere, its NOTIFY lost: the other instance has not heard of it (but for the backstop's read).
    const silent = await silentUnheard(sql, other, 'silent');
    const got = other.get(silent.id);
    assert.ok(got instanceof Promise, "an id above the copy's newest is asked of the database");
    assert.deepEqual(await got, { ...silent, categoryId: 1n });
    const pet = await one.create({ name: 'Rex', categoryId: 7n });
    await waitFor(
      () => listed(other).includes(pet.id),
      5000,
      'the next commit heard of: the copy reads on from its newest id, the silent pet too',
    );
    assert.deepEqual(listed(other).slice(-2), [silent.id, pet.id]);
    assert.deepEqual(other.get(pet.id), pet, 'now from memory');
    assert.equal(other.get(pet.id + 1) instanceof Promise, true, 'above the newest: the database again');
  });

  test('an instance reads its own creates at once, after the pets committed before them elsewhere even when their NOTIFY was lost', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const store = await openFilled(t, url);
    const sql = connect(t, url);
    const mine = await store.create({ name: 'first', categoryId: 1n });
    const lost = (await silentUnheard(sql, store, 'lost notify')).id;
    const next = await store.create({ name: 'next', categoryId: 2n });
    assert.equal(next.id, lost + 1);
    assert.deepEqual(listed(store).slice(-2), [lost, next.id], 'at once, and none skipped');
    assert.equal(listed(store)[0], mine.id);
  });

  test('a fill that fails for another reason than the database being away is reported once, not every 250 ms, and completes once it can read', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    await (await PostgresStore.open(url, { databaseReads: true })).close(); // the schema
    const sql = connect(t, url);
    await sql`INSERT INTO petstore.pets (id, name_json, category_id, status) VALUES (1, '"one"', 1, NULL)`;
    await sql`UPDATE petstore.pet_ids SET last_id = 1`;
    // A role that may read every table but the pets: the fill is refused, the database is there.
    const role = `petstore_copy_${randomBytes(4).toString('hex')}`;
    await sql.unsafe(`CREATE ROLE ${role} LOGIN`);
    await sql.unsafe(`GRANT USAGE ON SCHEMA petstore TO ${role}`);
    await sql.unsafe(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA petstore TO ${role}`);
    await sql.unsafe(`REVOKE SELECT ON petstore.pets FROM ${role}`);
    const reported: unknown[] = [];
    const store = await PostgresStore.open(url.replace('postgres://postgres@', `postgres://${role}@`), {
      onBackgroundError: (e) => reported.push(e),
    });
    t.after(() => store.close());
    await waitFor(() => reported.length > 0, 5000, 'the refused fill reported');
    await sleep(1000); // four more tries at least
    assert.equal(reported.length, 1, 'reported once, not at every try');
    assert.match(
      String(reported[0]),
      /the pets cannot be read into this instance's memory, trying again every 250 ms: permission denied for table pets/,
    );
    assert.ok(
      reported[0] instanceof CopyReadError,
      "told apart from the commit watch's failures, which the log names otherwise",
    );
    assert.equal(store.ready, false, 'not ready: the copy is not filled');
    await sql.unsafe(`GRANT SELECT ON petstore.pets TO ${role}`);
    await waitFor(() => store.ready, 5000, 'the copy filled once the pets may be read');
    assert.deepEqual(listed(store), [1]);
  });

  test('filled at start page by page: /healthz answers and /readyz says 503 until the copy is complete, then a log line counts the pets; --database-reads on reads the database instead', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    await (await PostgresStore.open(url, { databaseReads: true })).close(); // the schema
    const sql = connect(t, url);
    await sql`INSERT INTO petstore.pets (id, name_json, category_id, status) SELECT n, '"p' || n || '"', n, CASE WHEN n % 3 = 0 THEN 'sold' END FROM generate_series(1, ${FILLED}) AS n`;
    await sql`UPDATE petstore.pet_ids SET last_id = ${FILLED}`;
    // The fill cannot read while this transaction holds the table.
    let release: () => void = () => {};
    const released = new Promise<void>((r) => (release = r));
    let locked: () => void = () => {};
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = sql.begin(async (tx) => {
      await tx`LOCK TABLE petstore.pets IN ACCESS EXCLUSIVE MODE`;
      locked();
      await released;
    });
    await isLocked;
    const server = await spawnServerFor(t, ['--database-url', url], ENV);
    try {
      assert.equal((await request(server.url, 'GET', '/healthz', { auth: false })).status, 200);
      assert.equal(
        (await request(server.url, 'GET', '/readyz', { auth: false })).status,
        503,
        'not ready while the copy is filled',
      );
    } finally {
      release();
      await holder;
    }
    const ready = async () => (await request(server.url, 'GET', '/readyz', { auth: false })).status === 200;
    await waitFor(ready, 10_000, '/readyz 200 once the copy is filled');
    assert.match(
      server.stdout(),
      new RegExp(`"msg":"the pets are read into memory[^"]*".*"pets":${FILLED},"seconds":[0-9.]+`),
    );
    const last = await request(server.url, 'GET', `/v1/pets?after=${FILLED - 5}&limit=10`);
    assert.deepEqual(
      (last.json as Array<{ id: number }>).map((p) => p.id),
      [FILLED - 4, FILLED - 3, FILLED - 2, FILLED - 1, FILLED],
      'every page of the fill read',
    );
    const sold = await request(server.url, 'GET', `/v1/pets?status=sold&after=${FILLED - 10}`);
    const soldIds = [FILLED - 7, FILLED - 4, FILLED - 1]; // the multiples of 3
    assert.equal(
      sold.text,
      `[${soldIds.map((n) => `{"id":${n},"name":"p${n}","categoryId":${n},"status":"sold"}`).join(',')}]`,
    );

    // A pet committed without its NOTIFY: the database lists it at once; the copy once its watch reads the
    // highest id all the same (every second), not before (asserting that it has not yet was a race with it).
    const reads = await spawnServerFor(t, ['--database-url', url, '--database-reads', 'on'], ENV);
    assert.equal(
      (await request(reads.url, 'GET', '/readyz', { auth: false })).status,
      200,
      'ready at once: nothing to fill',
    );
    const silent = await insertSilently(sql, 'silent');
    const after = `/v1/pets?after=${FILLED}`;
    assert.equal((await request(reads.url, 'GET', after)).text, `[{"id":${silent},"name":"silent","categoryId":1}]`);
    const copied = `[{"id":${silent},"name":"silent","categoryId":1}]`;
    await waitFor(async () => (await request(server.url, 'GET', after)).text === copied, 5000, 'the copy reads it');
    assert.doesNotMatch(reads.stdout(), /read into memory/);
  });

  test('a catch-up asked for while one is reading is not dropped: the copy holds the pet committed meanwhile, ' +
    'with no further commit', { timeout: 30_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    await migrate(sql);
    // Each statement of the copy runs through this guard; while `held`, a read that is done waits here.
    let reads = 0;
    let held: Promise<void> | undefined;
    const guard = async <T>(work: () => Promise<T>): Promise<T> => {
      const result = await work();
      reads++;
      await held;
      return result;
    };
    const copy = new PetCopy(
      sql,
      guard,
      () => {},
      () => {},
    );
    t.after(() => copy.close());
    await copy.fill();
    let release: () => void = () => {};
    held = new Promise((r) => (release = r));
    const first = await insertSilently(sql, 'read by the first catch-up');
    const before = reads;
    copy.catchUp();
    await waitFor(() => reads === before + 1, 5000, 'the first catch-up has read');
    const second = await insertSilently(sql, 'committed while it read');
    copy.catchUp(); // the commit watch heard of the second pet during the read
    release();
    await copy.own(0, []); // the copy's changes run one at a time: this one after every catch-up asked for before it
    assert.deepEqual([copy.lastId, copy.size], [second, 2], `pets ${first} and ${second} in the copy`);
  });
}
