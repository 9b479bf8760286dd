/**
 * The PostgreSQL store through the service: the same answers byte for byte as the file store, group
 * commit with ascending ids, 201 only after COMMIT, bounded waiting, the schema and its versions.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import postgres from 'postgres';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '#dist/store/postgres/schema.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { StoreUnavailableError } from '#dist/store/store.js';
import { runCli, startServer, TEST_KEY, type Response, type TestServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

/** A connection of the test's own to `url`, closed when the test ends. */
export function connect(t: { after(fn: () => Promise<void>): void }, url: string): postgres.Sql {
  const sql = postgres(url, { max: 2, onnotice: () => {} });
  t.after(() => sql.end({ timeout: 1 }));
  return sql;
}

/** Holds the id row, as a commit of another instance would, until `release()`. */
export async function holdIds(sql: ReturnType<typeof connect>): Promise<{ release: () => Promise<void> }> {
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  let locked: () => void = () => {};
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = sql.begin(async (tx) => {
    await tx`SELECT last_id FROM petstore.pet_ids FOR UPDATE`;
    locked();
    await held;
  });
  await isLocked;
  return {
    release: async () => {
      release();
      await holder;
    },
  };
}

/** Status, headers (but for the two that change with every answer) and body, to compare two servers. */
function shown(res: Response): string {
  const headers = [];
  for (let i = 0; i < res.rawHeaders.length; i += 2) {
    const name = (res.rawHeaders[i] as string).toLowerCase();
    if (name !== 'date' && name !== 'x-request-id') headers.push(`${name}: ${res.rawHeaders[i + 1]}`);
  }
  return `${res.status}\n${headers.join('\n')}\n\n${res.text}`;
}

export function storeTests(cluster: () => Cluster): void {
  test('answers byte for byte as the file store does: creates, pages, filters, single pets, errors', async (t) => {
    const files = await startServer();
    t.after(() => files.close());
    const database = await startServer({ databaseUrl: await cluster().createDatabase() });
    t.after(() => database.close());
    const bodies = [
      '{"name":"Rex","categoryId":9223372036854775807,"status":"available"}',
      '{"name":"nul \\u0000 and lone \\ud800 surrogate","categoryId":-9223372036854775808}',
      '{"status":"sold","categoryId":9007199254740993,"name":"Ünïcödé 🐕 \\"quoted\\" \\\\ back"}',
      '{"name":"pending one","categoryId":0,"status":"pending"}',
      '{"name":"x","categoryId":1.5}',
      '{"name":"","categoryId":1}',
      ...Array.from(
        { length: 25 },
        (_, i) =>
          `{"name":"pet ${i}","categoryId":${i * 1_000_000_007},"status":"${['available', 'pending', 'sold'][i % 3]}"}`,
      ),
    ];
    const exchanges: Array<[string, string, string?]> = [
      ...bodies.map((body): [string, string, string] => ['POST', '/v1/pets', body]),
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets?limit=7'],
      ['GET', '/v1/pets?limit=7&after=7'],
      ['GET', '/v1/pets?after=28'],
      ['GET', '/v1/pets?status=sold&limit=3'],
      ['GET', '/v1/pets?status=sold&limit=3&after=9'],
      ['GET', '/v1/pets?after=9223372036854775807'],
      ['GET', '/v1/pets?after=-5&limit=2'],
      ['GET', '/v1/pets/1'],
      ['GET', '/v1/pets/2'],
      ['GET', '/v1/pets/3'],
      ['GET', '/v1/pets/999'],
      ['GET', '/v1/pets/9223372036854775807'],
      ['GET', '/v1/pets/abc'],
      ['GET', '/v1/pets?limit=0'],
      ['GET', '/readyz'],
    ];
    for (const [method, path, body] of exchanges) {
      const options = body === undefined ? {} : { headers: JSON_HEADERS, body };
      const [a, b] = [await files.request(method, path, options), await database.request(method, path, options)];
      assert.equal(shown(b), shown(a), `${method} ${path} ${body ?? ''}`);
    }
  });

  test('creates that arrive together share commits, and get ids 1, 2, 3, … in the order they are listed', async (t) => {
    const url = await cluster().createDatabase();
    const server = await startServer({ databaseUrl: url });
    t.after(() => server.close());
    const sql = connect(t, url);
    const created = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        server.request('POST', '/v1/pets', { headers: JSON_HEADERS, body: `{"name":"n${i}","categoryId":${i}}` }),
      ),
    );
    assert.ok(
      created.every((r) => r.status === 201),
      'every create is acknowledged',
    );
    assert.deepEqual(
      created.map((r) => (r.json as { id: number }).id).sort((x, y) => x - y),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    // Rows written by one transaction share its xmin: the number of transactions that stored the 200 pets.
    const [row] = await sql`SELECT count(DISTINCT xmin::text)::int AS transactions FROM petstore.pets`;
    const transactions = row?.transactions as number;
    assert.ok(transactions >= 1 && transactions < 100, `200 creates took ${transactions} transactions`);
    t.diagnostic(`200 concurrent creates were committed in ${transactions} transactions`);
    const listed = [];
    for (let after = 0, more = true; more; ) {
      const page = (await server.request('GET', `/v1/pets?limit=100&after=${after}`)).json as Array<{
        id: number;
        name: string;
      }>;
      listed.push(...page);
      more = page.length === 100;
      after = page.at(-1)?.id ?? after;
    }
    assert.deepEqual(
      listed.map((p) => p.id),
      Array.from({ length: 200 }, (_, i) => i + 1),
    );
    for (const r of created) assert.deepEqual(listed[(r.json as { id: number }).id - 1], r.json);
  });

  test('a create is answered 201 only after its COMMIT, and is visible to every connection as soon as it is', async (t) => {
    const url = await cluster().createDatabase();
    const server = await startServer({ databaseUrl: url });
    t.after(() => server.close());
    const sql = connect(t, url);
    // Another transaction holds the id row, as a commit of another instance would.
    const ids = await holdIds(sql);
    let answered = false;
    const create = server
      .request('POST', '/v1/pets', { headers: JSON_HEADERS, body: '{"name":"waits","categoryId":1}' })
      .then((r) => {
        answered = true;
        return r;
      });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(answered, false, 'no answer while the commit cannot happen');
    assert.equal((await sql`SELECT count(*)::int AS n FROM petstore.pets`)[0]?.n, 0);
    await ids.release();
    const res = await create;
    assert.equal(res.status, 201);
    assert.deepEqual(
      [...(await sql`SELECT id::int, name_json, category_id::text FROM petstore.pets`)],
      [{ id: 1, name_json: '"waits"', category_id: '1' }],
    );
  });

  test('creates beyond the waiting bound are refused at once, and a statement over its timeout is a 503, not a 500', async (t) => {
    const url = await cluster().createDatabase();
    const store = await PostgresStore.open(url, { maxWaitingCreates: 3, statementTimeout: 400 });
    t.after(() => store.close());
    const sql = connect(t, url);
    const pet = { name: 'p', categoryId: 1n };
    const ids = await holdIds(sql);
    const first = store.create(pet); // in its statement, waiting for the lock
    await new Promise((r) => setTimeout(r, 50));
    const waiting = [store.create(pet), store.create(pet), store.create(pet)];
    await assert.rejects(
      store.create(pet),
      (error: Error) => error instanceof StoreUnavailableError && /too many creates/.test(error.message),
    );
    // The statement waiting for the lock is cancelled by the database after 400 ms.
    await assert.rejects(first, (error: Error) => error instanceof StoreUnavailableError);
    assert.equal(store.ready, false, 'a timed-out write makes the store not ready');
    await ids.release();
    const stored = await Promise.all(waiting);
    assert.deepEqual(
      stored.map((p) => p.id),
      [1, 2, 3],
    );
    assert.equal(store.ready, true, 'a successful write makes it ready again');
  });

  test('the schema is made at first start with its version; an older one is migrated, a newer one refused', async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const server = await startServer({ databaseUrl: url });
    await server.close();
    assert.deepEqual([...(await sql`SELECT version FROM petstore.schema_version`)], [{ version: SCHEMA_VERSION }]);

    // A later version of the server: one more migration, applied once even when two start together.
    const next = [...MIGRATIONS, ['ALTER TABLE petstore.pets ADD COLUMN note text']];
    const results = await Promise.all([migrate(sql, next), migrate(sql, next)]);
    assert.deepEqual(
      results.map((r) => r.to),
      [SCHEMA_VERSION + 1, SCHEMA_VERSION + 1],
    );
    assert.equal(results.filter((r) => r.from === SCHEMA_VERSION).length, 1, 'exactly one of the two migrated');
    assert.deepEqual([...(await sql`SELECT version FROM petstore.schema_version`)], [{ version: SCHEMA_VERSION + 1 }]);

    // This server is now the older one: it refuses to start, saying why.
    const refused = await runCli(['--port', '0', '--database-url', url], { PETSTORE_API_KEYS: TEST_KEY });
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      new RegExp(
        `schema is version ${SCHEMA_VERSION + 1}, newer than this server knows \\(version ${SCHEMA_VERSION}\\)`,
      ),
    );
    assert.ok(!refused.stderr.includes('    at '), 'a message, not a stack trace');
  });

  test('an empty database is migrated by instances starting together, once', async (t) => {
    const url = await cluster().createDatabase();
    const servers: TestServer[] = await Promise.all([1, 2, 3].map(() => startServer({ databaseUrl: url })));
    t.after(() => Promise.all(servers.map((s) => s.close())));
    const created = await Promise.all(
      servers.map((s, i) =>
        s.request('POST', '/v1/pets', { headers: JSON_HEADERS, body: `{"name":"s${i}","categoryId":1}` }),
      ),
    );
    assert.deepEqual(
      created.map((r) => r.status),
      [201, 201, 201],
    );
  });
}
