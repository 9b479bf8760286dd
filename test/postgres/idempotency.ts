/**
 * `Idempotency-Key` with the PostgreSQL store: the same rules as the file store (test/idempotency.test.ts),
 * with the keys in the database — unique across instances, in the pet's own transaction, through a
 * kill -9, scoped to the API key, forgotten and deleted after the window — and the schema migration
 * that brought the table.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test, type TestContext } from 'node:test';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '#dist/store/postgres/schema.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { StoreUnavailableError } from '#dist/store/store.js';
import {
  request,
  spawnServer,
  spawnServerFor,
  startServer,
  TEST_KEY,
  type Response,
  type ServerProcess,
  type TestServer,
} from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect, holdIds } from './store.js';

const OTHER_KEY = 'other-key-0123456789abcdef';
// The statements of schema version 1 as released (cb7f43c): what a database of that version holds.
const RELEASED_V1_SHA256 = 'ddf9f538c39ce72387a0ef08febd3f4c6743d1df21a815c08ba5410d1d9b835f';
const ENV = { PETSTORE_API_KEYS: `${TEST_KEY},${OTHER_KEY}` };

function create(url: string, body: string, key?: string, auth: string = TEST_KEY): Promise<Response> {
  const headers: Array<[string, string]> = [['content-type', 'application/json']];
  if (key !== undefined) headers.push(['idempotency-key', key]);
  return request(url, 'POST', '/v1/pets', { headers, body, auth });
}

async function serve(t: TestContext, databaseUrl: string, idempotencyWindow?: number): Promise<TestServer> {
  const server = await startServer({
    databaseUrl,
    keys: [TEST_KEY, OTHER_KEY],
    ...(idempotencyWindow === undefined ? {} : { idempotencyWindow }),
  });
  t.after(() => server.close());
  return server;
}

async function count(sql: ReturnType<typeof connect>, table: 'pets' | 'idempotency_keys'): Promise<number> {
  const [row] = await sql`SELECT count(*)::int AS n FROM ${sql('petstore')}.${sql(table)}`;
  return row?.n as number;
}

export function idempotencyTests(cluster: () => Cluster): void {
  test('a retry with the same key and the same pet gets the first 201 again, marked replayed; another pet is a 422', async (t) => {
    const url = await cluster().createDatabase();
    const server = await serve(t, url);
    const sql = connect(t, url);
    const first = await create(server.url, '{"name":"Rex","categoryId":9007199254740993,"status":"sold"}', '"retry-1"');
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay');
    const again = await create(
      server.url,
      '{ "status": "sold", "categoryId": 9007199254740993, "name": "Rex" }',
      'retry-1',
    );
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.location, first.headers.location);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    for (const body of [
      '{"name":"Max","categoryId":9007199254740993,"status":"sold"}',
      '{"name":"Rex","categoryId":9007199254740992,"status":"sold"}',
      '{"name":"Rex","categoryId":9007199254740993}',
    ]) {
      const res = await create(server.url, body, 'retry-1');
      assert.equal(res.status, 422, body);
      assert.equal((res.json as { code: string }).code, 'idempotency_key_reused');
    }
    assert.equal(await count(sql, 'pets'), 1);
    assert.equal(await count(sql, 'idempotency_keys'), 1);
  });

  test('keyed creates share the batch transaction with the others, and each key is committed with its own pet', async (t) => {
    const url = await cluster().createDatabase();
    const server = await serve(t, url);
    const sql = connect(t, url);
    const results = await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        create(server.url, `{"name":"n${i}","categoryId":${i}}`, i % 2 === 0 ? `key-${i}` : undefined),
      ),
    );
    assert.ok(
      results.every((r) => r.status === 201),
      results.map((r) => r.status).join(','),
    );
    assert.deepEqual(
      results.map((r) => (r.json as { id: number }).id).sort((a, b) => a - b),
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    const [row] = await sql`SELECT count(DISTINCT xmin::text)::int AS transactions FROM petstore.pets`;
    assert.ok((row?.transactions as number) < 100, `100 creates took ${row?.transactions} transactions`);
    const keys =
      await sql`SELECT k.key, p.name_json, k.xmin::text = p.xmin::text AS together FROM petstore.idempotency_keys k JOIN petstore.pets p ON p.id = k.pet_id ORDER BY k.key`;
    assert.equal(keys.length, 50);
    for (const k of keys) {
      assert.equal(k.name_json, `"n${(k.key as string).slice(4)}"`, 'the key points to its own pet');
      assert.equal(k.together, true, 'the key row and its pet were written by the same transaction');
    }
  });

  test('concurrent retries with one key through three instances make exactly one pet; the rest replay or get 409', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const instances: ServerProcess[] = [];
    for (let i = 0; i < 3; i++) instances.push(await spawnServerFor(t, ['--database-url', url], ENV));
    const body = '{"name":"Once","categoryId":1}';
    const burst = (key: string): Promise<Response[]> =>
      Promise.all(Array.from({ length: 30 }, (_, i) => create((instances[i % 3] as ServerProcess).url, body, key)));
    const check = (results: Response[]): void => {
      const created = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
      assert.equal(
        created.length,
        1,
        results.map((r) => `${r.status}${r.headers['idempotent-replayed'] === undefined ? '' : 'r'}`).join(','),
      );
      for (const r of results) {
        if (r.status === 409) assert.equal((r.json as { code: string }).code, 'request_in_progress');
        else assert.equal(r.text, created[0]?.text, `${r.status} ${r.text}`);
      }
    };

    // While another transaction holds the id row, each instance's first create waits for it in the database.
    const lock = await holdIds(sql);
    const held = burst('held');
    for (let waiting = 0; waiting < 3; ) {
      const [row] =
        await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'petstore' AND wait_event_type = 'Lock'`;
      waiting = row?.n as number;
      await new Promise((r) => setTimeout(r, 20));
    }
    await lock.release();
    const heldResults = await held;
    check(heldResults);
    assert.equal(
      heldResults.filter((r) => r.headers['idempotent-replayed'] === 'true').length,
      2,
      'the two other instances waited and replayed',
    );
    // And freely, all at once.
    check(await burst('free'));

    assert.equal(await count(sql, 'pets'), 2);
    assert.equal(await count(sql, 'idempotency_keys'), 2);
    for (const s of instances)
      assert.equal(
        (await create(s.url, body, 'held')).headers['idempotent-replayed'],
        'true',
        'a late retry is a replay everywhere',
      );
  });

  test('keys are scoped to the API key: another client with the same key makes its own pet', async (t) => {
    const url = await cluster().createDatabase();
    const server = await serve(t, url);
    const mine = await create(server.url, '{"name":"Mine","categoryId":1}', 'shared', TEST_KEY);
    const theirs = await create(server.url, '{"name":"Theirs","categoryId":2}', 'shared', OTHER_KEY);
    assert.equal(mine.status, 201);
    assert.equal(theirs.status, 201, 'not a 422: the other client never used this key');
    assert.equal(theirs.headers['idempotent-replayed'], undefined);
    assert.notEqual((theirs.json as { id: number }).id, (mine.json as { id: number }).id);
    const replays = [
      await create(server.url, '{"name":"Mine","categoryId":1}', 'shared', TEST_KEY),
      await create(server.url, '{"name":"Theirs","categoryId":2}', 'shared', OTHER_KEY),
    ];
    assert.deepEqual(
      replays.map((r) => [r.headers['idempotent-replayed'], r.text]),
      [
        ['true', mine.text],
        ['true', theirs.text],
      ],
    );
  });

  test('past the window a key is forgotten (the same request makes a new pet) and expired keys are deleted', async (t) => {
    const url = await cluster().createDatabase();
    const server = await serve(t, url, 1);
    const sql = connect(t, url);
    const first = await create(server.url, '{"name":"Old","categoryId":1}', 'old');
    assert.equal(first.status, 201);
    assert.equal((await create(server.url, '{"name":"Gone","categoryId":2}', 'gone')).status, 201);
    assert.equal(
      (await create(server.url, '{"name":"Old","categoryId":1}', 'old')).headers['idempotent-replayed'],
      'true',
      'within the window',
    );
    await new Promise((r) => setTimeout(r, 1100));
    const again = await create(server.url, '{"name":"Old","categoryId":1}', 'old');
    assert.equal(again.status, 201);
    assert.equal(again.headers['idempotent-replayed'], undefined);
    assert.equal((again.json as { id: number }).id, 3);
    // The expired "gone" was deleted by that create's transaction; "old" now names the new pet.
    assert.deepEqual(
      [...(await sql`SELECT key, pet_id::int FROM petstore.idempotency_keys`)],
      [{ key: 'old', pet_id: 3 }],
    );
    assert.equal(
      (await create(server.url, '{"name":"Old","categoryId":1}', 'old')).text,
      again.text,
      'the new create is remembered in turn',
    );
  });

  test('a replay after kill -9 of the instance, and through another instance, answers exactly as before', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const args = ['--database-url', url];
    const victim = await spawnServer(args, ENV);
    t.after(async () => {
      if (victim.child.exitCode === null && victim.child.signalCode === null) victim.child.kill('SIGKILL');
      await victim.exited;
    });
    const other = await spawnServerFor(t, args, ENV);
    const body = '{"name":"Durable","categoryId":-9223372036854775808,"status":"pending"}';
    const first = await create(victim.url, body, '"keep me"');
    assert.equal(first.status, 201);
    victim.child.kill('SIGKILL');
    await victim.exited;

    const through = await create(other.url, body, '"keep me"');
    assert.equal(through.headers['idempotent-replayed'], 'true', 'replayed by another instance');
    assert.equal(through.text, first.text);
    assert.equal(through.headers.location, first.headers.location);
    const restarted = await spawnServerFor(t, args, ENV);
    const after = await create(restarted.url, body, '"keep me"');
    assert.equal(after.headers['idempotent-replayed'], 'true', 'replayed after the restart');
    assert.equal(after.text, first.text);
    assert.equal((await create(restarted.url, '{"name":"Other","categoryId":1}', '"keep me"')).status, 422);
  });

  test('only a stored create is remembered: after a 400 or a 503 the same key creates', async (t) => {
    const url = await cluster().createDatabase();
    const server = await serve(t, url);
    assert.equal((await create(server.url, '{"name":"Typo","categoryId":"1"}', 'after-400')).status, 400);
    const corrected = await create(server.url, '{"name":"Fixed","categoryId":1}', 'after-400');
    assert.equal(corrected.status, 201);
    assert.equal(corrected.headers['idempotent-replayed'], undefined);

    // A create the database cannot take in time (the id row is held past the statement timeout) is refused.
    const store = await PostgresStore.open(url, { statementTimeout: 400 });
    t.after(() => store.close());
    const sql = connect(t, url);
    const lock = await holdIds(sql);
    const key = { scope: 'scope-a', key: 'after-503' };
    await assert.rejects(
      store.createOnce({ name: 'Lost', categoryId: 1n }, key),
      (error: Error) => error instanceof StoreUnavailableError && error.operation === 'write',
    );
    await lock.release();
    const stored = await store.createOnce({ name: 'Another', categoryId: 2n }, key);
    assert.deepEqual(
      stored,
      { pet: { id: 2, name: 'Another', categoryId: 2n }, replayed: false },
      'neither a 409 nor a 422: the key was free',
    );
    assert.deepEqual(await store.createOnce({ name: 'Another', categoryId: 2n }, key), {
      pet: stored.pet,
      replayed: true,
    });
  });

  test('a schema of version 1, from before idempotency keys, is migrated at start: its pets kept, keys working', async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const v1 = MIGRATIONS.slice(0, 1);
    assert.equal(
      createHash('sha256').update(JSON.stringify(v1[0])).digest('hex'),
      RELEASED_V1_SHA256,
      'a released migration is never edited: a change is a new one',
    );
    assert.deepEqual(await migrate(sql, v1), { from: 0, to: 1 });
    await sql`UPDATE petstore.pet_ids SET last_id = 1`;
    await sql`INSERT INTO petstore.pets (id, name_json, category_id, status) VALUES (1, '"Older"', 5, NULL)`;
    const server = await serve(t, url);
    assert.deepEqual([...(await sql`SELECT version FROM petstore.schema_version`)], [{ version: SCHEMA_VERSION }]);
    assert.equal((await server.request('GET', '/v1/pets/1')).text, '{"id":1,"name":"Older","categoryId":5}');
    const first = await create(server.url, '{"name":"Newer","categoryId":6}', 'after-migration');
    assert.equal((first.json as { id: number }).id, 2);
    assert.equal(
      (await create(server.url, '{"name":"Newer","categoryId":6}', 'after-migration')).headers['idempotent-replayed'],
      'true',
    );
  });
}
