/**
 * Pets are immutable in this API, and every instance serves its copy in memory: a row changed behind
 * the service would be served stale until a restart. The table refuses UPDATE, DELETE and TRUNCATE
 * with an error naming the reason, installed by the schema (new databases, upgrades, `migrate`).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { migrate, MIGRATIONS } from '#dist/store/postgres/schema.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const REASON = /pets are immutable/;

/** Asserts that the pets table refuses every change to its rows, and that pet 1 is still `name`. */
export async function assertImmutable(sql: ReturnType<typeof connect>, name: string): Promise<void> {
  await assert.rejects(
    sql`UPDATE petstore.pets SET name_json = '"changed"' WHERE id = 1`,
    {
      code: '23001',
      message:
        'UPDATE on petstore.pets refused: pets are immutable in this API, and every instance serves its own ' +
        'copy of them, which would go on serving the old rows',
    },
    'UPDATE refused',
  );
  await assert.rejects(sql`DELETE FROM petstore.pets WHERE id = 1`, REASON, 'DELETE refused');
  await assert.rejects(sql`TRUNCATE petstore.pets CASCADE`, REASON, 'TRUNCATE refused');
  const rows = await sql`SELECT name_json FROM petstore.pets WHERE id = 1`;
  assert.deepEqual([...rows], [{ name_json: JSON.stringify(name) }]);
}

export function immutablePetTests(cluster: () => Cluster): void {
  test('an UPDATE, a DELETE or a TRUNCATE of the pets table is refused, naming the reason', async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const store = await PostgresStore.open(url);
    t.after(() => store.close());
    await store.create({ name: 'Rex', categoryId: 1n, status: undefined });
    await assertImmutable(sql, 'Rex');
    // What docs/postgresql.md tells an operator who must remove a pet all the same.
    await sql.begin(async (tx) => {
      await tx`ALTER TABLE petstore.pets DISABLE TRIGGER pets_immutable`;
      await tx`DELETE FROM petstore.idempotency_keys WHERE pet_id = 1`;
      await tx`DELETE FROM petstore.pets WHERE id = 1`;
      await tx`ALTER TABLE petstore.pets ENABLE TRIGGER pets_immutable`;
    });
    assert.deepEqual([...(await sql`SELECT id FROM petstore.pets`)], []);
    await store.create({ name: 'Rex', categoryId: 1n, status: undefined });
    await assert.rejects(sql`DELETE FROM petstore.pets`, REASON, 'the trigger is on again');
  });

  test('a database of schema version 3 gets the trigger at the next start; its pets stay', async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    await migrate(sql, MIGRATIONS.slice(0, 3));
    await sql`INSERT INTO petstore.pets (id, name_json, category_id) VALUES (1, '"kept"', 7)`;
    await sql`UPDATE petstore.pet_ids SET last_id = 1`;
    const store = await PostgresStore.open(url);
    t.after(() => store.close());
    await assertImmutable(sql, 'kept');
  });
}
