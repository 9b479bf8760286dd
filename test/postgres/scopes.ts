/**
 * Scopes and quotas over PostgreSQL: keys made with scopes in the database reach every instance
 * within the key-poll delay and hold there as on the file store; the schema version that added the
 * columns migrates a database of the previous version, its keys keeping full access; `migrate` copies
 * scopes and rate limits; a quota is counted per instance; a key also in PETSTORE_API_KEYS refuses
 * the start, and one added later is kept stricter.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { addKey, removeKey } from '#dist/store/postgres/keys.js';
import { migrate, MIGRATIONS, SCHEMA_VERSION } from '#dist/store/postgres/schema.js';
import { request, runCli, spawnServerFor, startServer, tempDirFor, TEST_KEY } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
// The instances read the keys every second; one more for the query and the first request.
const POLL_BOUND_MS = 2000;

async function createKey(url: string, args: string[]): Promise<{ id: string; key: string }> {
  const created = await runCli(['keys', 'create', ...args, '--database-url', url]);
  assert.equal(created.code, 0, created.stderr);
  return {
    id: /^created key ([^\s;]+)/.exec(created.stdout)?.[1] as string,
    key: created.stdout.trim().split('\n').at(-1) as string,
  };
}

/** What `key` gets for list, get and create on the instance at `url`. */
async function statuses(url: string, key: string): Promise<number[]> {
  return [
    (await request(url, 'GET', '/v1/pets', { auth: key })).status,
    (await request(url, 'GET', '/v1/pets/1', { auth: key })).status,
    (await request(url, 'POST', '/v1/pets', { auth: key, headers: JSON_HEADERS, body: '{"name":"x","categoryId":1}' }))
      .status,
  ];
}

export function scopeTests(cluster: () => Cluster): void {
  test('keys made with scopes in the database hold on every instance within the key-poll delay: each scope against each operation', async (t) => {
    const url = await cluster().createDatabase();
    // A key not read yet is a 401, which the bad-key limiter counts: polling for it must not be blocked.
    const instances = await Promise.all(
      [1, 2].map(() =>
        spawnServerFor(t, ['--database-url', url, '--auth-failure-limit', '1000'], { PETSTORE_API_KEYS: TEST_KEY }),
      ),
    );
    assert.equal(
      (
        await request(instances[0]?.url as string, 'POST', '/v1/pets', {
          headers: JSON_HEADERS,
          body: '{"name":"one","categoryId":1}',
        })
      ).status,
      201,
    );
    const reader = await createKey(url, ['--scope', 'pets:read']);
    const writer = await createKey(url, ['--scope', 'pets:write']);
    const both = await createKey(url, []);
    const made = Date.now();
    const expected = new Map([
      [reader.key, [200, 200, 403]],
      [writer.key, [403, 403, 201]],
      [both.key, [200, 200, 201]],
    ]);
    for (const instance of instances) {
      for (const [key, wanted] of expected) {
        for (;;) {
          const got = await statuses(instance.url, key);
          if (got.join() === wanted.join()) break;
          assert.ok(
            Date.now() - made <= POLL_BOUND_MS + 1000,
            `still ${got.join()} instead of ${wanted.join()} on ${instance.url}`,
          );
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    }
    const took = Date.now() - made;
    assert.ok(took <= POLL_BOUND_MS, `the keys took ${took} ms to hold on both instances`);
    for (const key of [reader.key, writer.key]) {
      for (const path of ['/v1/openapi.json', '/healthz', '/readyz'])
        assert.equal(
          (await request(instances[1]?.url as string, 'GET', path, { auth: key })).status,
          200,
          `${path} needs no scope`,
        );
    }
    const refused = await request(instances[1]?.url as string, 'POST', '/v1/pets', {
      auth: reader.key,
      headers: JSON_HEADERS,
      body: '{"name":"x","categoryId":1}',
    });
    assert.equal(
      refused.headers['www-authenticate'],
      'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"',
    );
    const listed = await runCli(['keys', 'list', '--database-url', url]);
    assert.match(listed.stdout, new RegExp(`^${reader.id}  \\S+  pets:read  default  $`, 'm'));
    assert.match(listed.stdout, new RegExp(`^${both.id}  \\S+  pets:read,pets:write  default  $`, 'm'));
  });

  test(
    'a database of schema version 2, before scopes, is migrated at start: its keys keep every scope, ' +
      'and new keys take scopes',
    async (t) => {
      const url = await cluster().createDatabase();
      const sql = connect(t, url);
      await migrate(sql, MIGRATIONS.slice(0, 2));
      const key = 'pre-scopes-key-0123456789';
      const old = {
        id: 'old1',
        label: 'before scopes',
        created: '2026-01-01T00:00:00.000Z',
        sha256: createHash('sha256').update(key).digest('hex'),
      };
      await sql`INSERT INTO petstore.api_keys ${sql(old)}`;
      await sql`INSERT INTO petstore.api_keys_initialised DEFAULT VALUES`;
      await sql`INSERT INTO petstore.pets (id, name_json, category_id) VALUES (1, '"kept"', 7)`;
      await sql`UPDATE petstore.pet_ids SET last_id = 1`;

      const server = await startServer({ databaseUrl: url });
      t.after(() => server.close());
      assert.deepEqual([...(await sql`SELECT version FROM petstore.schema_version`)], [{ version: SCHEMA_VERSION }]);
      assert.deepEqual(
        [...(await sql`SELECT id, scopes, rate_limit_requests, rate_limit_seconds FROM petstore.api_keys`)],
        [{ id: 'old1', scopes: null, rate_limit_requests: null, rate_limit_seconds: null }],
      );
      assert.deepEqual(await statuses(server.url, key), [200, 200, 201], 'the key from before scopes reads and writes');
      assert.equal(
        ((await request(server.url, 'GET', '/v1/pets/1', { auth: key })).json as { name: string }).name,
        'kept',
      );

      const reader = await createKey(url, ['--scope', 'pets:read', '--rate-limit', '5/60']);
      assert.deepEqual(
        [
          ...(await sql`SELECT scopes, rate_limit_requests, rate_limit_seconds FROM petstore.api_keys WHERE id = ${reader.id}`),
        ],
        [{ scopes: ['pets:read'], rate_limit_requests: 5, rate_limit_seconds: 60 }],
      );
      await assert.rejects(
        sql`UPDATE petstore.api_keys SET scopes = '{pets:delete}' WHERE id = ${reader.id}`,
        /api_keys_scopes_check/,
        'the database holds only known scopes',
      );
      await assert.rejects(
        sql`UPDATE petstore.api_keys SET rate_limit_seconds = NULL WHERE id = ${reader.id}`,
        /check/,
        'a rate limit is both numbers or neither',
      );
    },
  );

  test("migrate copies each key's scopes and rate limit from keys.json into the database", async (t) => {
    const dir = await tempDirFor(t, 'petstore-migrate-scopes-');
    const files = await startServer({ dataDir: dir });
    await files.stop();
    const made = await runCli(['keys', 'create', '--scope', 'pets:read', '--rate-limit', '1/600', '--data-dir', dir]);
    assert.equal(made.code, 0, made.stderr);
    const key = made.stdout.trim().split('\n').at(-1) as string;
    const url = await cluster().createDatabase();
    const migrated = await runCli(['migrate', '--data-dir', dir, '--database-url', url]);
    assert.equal(migrated.code, 0, migrated.stderr);
    const server = await startServer({ databaseUrl: url, keys: [] });
    t.after(() => server.close());
    assert.deepEqual(await statuses(server.url, key), [200, 429, 429], 'pets:read, and its own quota of 1 per 600 s');
    const refused = await request(server.url, 'GET', '/v1/pets', { auth: key });
    assert.equal(refused.headers['ratelimit-policy'], '"per-key";q=1;w=600');
  });

  test('a key both in PETSTORE_API_KEYS and in the database refuses the start; one added to the database later is kept stricter, and its removal ends it', async (t) => {
    const url = await cluster().createDatabase();
    const reader = await createKey(url, ['--scope', 'pets:read']);
    const refused = await runCli(['--port', '0', '--database-url', url], {
      PETSTORE_API_KEYS: `${TEST_KEY},${reader.key}`,
    });
    assert.equal(refused.code, 1, refused.stderr);
    assert.equal(
      refused.stderr.split('\n')[0],
      `cannot start: the API key env-2 (key 2 of PETSTORE_API_KEYS, or of createPetstore's keys) is also ${reader.id} in the database; give each key once: remove one of the two`,
    );

    const lines: string[] = [];
    const server = await startServer({
      databaseUrl: url,
      keys: [TEST_KEY],
      logger: {
        request() {},
        info() {},
        error: (message, _error, fields) => lines.push(`${message}: ${fields?.keyId}`),
      },
    });
    t.after(() => server.close());
    const sql = connect(t, url);
    await addKey(sql, {
      id: 'copy1',
      label: 'copy',
      created: new Date().toISOString(),
      sha256: createHash('sha256').update(TEST_KEY).digest('hex'),
      scopes: ['pets:read'],
    });
    const until = async (wanted: number[]): Promise<void> => {
      const started = performance.now();
      let got: number[] = [];
      while (performance.now() - started <= POLL_BOUND_MS) {
        got = [
          (await request(server.url, 'GET', '/v1/pets')).status,
          (
            await request(server.url, 'POST', '/v1/pets', {
              headers: JSON_HEADERS,
              body: '{"name":"x","categoryId":1}',
            })
          ).status,
        ];
        if (got.join() === wanted.join()) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.fail(`${got.join()} instead of ${wanted.join()} after ${POLL_BOUND_MS} ms`);
    };
    await until([200, 403]);
    assert.deepEqual(lines, ['API key given twice; the stricter entry is in force: copy1']);
    assert.equal(await removeKey(sql, 'copy1'), true);
    await until([401, 401]);
    assert.equal(lines.at(-1), 'API key given directly withdrawn: its copy was revoked: env-1');
  });

  test("a quota is counted per instance: each of two instances admits the key's quota", async (t) => {
    const url = await cluster().createDatabase();
    const instances = await Promise.all(
      [1, 2].map(() =>
        spawnServerFor(t, ['--database-url', url, '--rate-limit', '2/600'], { PETSTORE_API_KEYS: TEST_KEY }),
      ),
    );
    const got = [];
    for (const instance of [...instances, ...instances]) {
      for (let i = 0; i < 2; i++) got.push((await request(instance.url, 'GET', '/v1/pets')).status);
    }
    assert.deepEqual(got, [200, 200, 200, 200, 429, 429, 429, 429]);
  });
}
