import type { ReservedSql, Sql } from 'postgres';
import { StoreOpenError } from '../store.js';
import { WEBHOOK_TABLES } from './webhook-subscriptions.js';

/**
 * The tables of the PostgreSQL store, all in the schema `petstore`, and how an older layout is brought
 * up to date. Migration `i` takes version `i` to `i + 1`; version 0 is an empty database. Released
 * migrations are never edited: a change is a new entry at the end.
 */
export const MIGRATIONS: readonly (readonly string[])[] = [
  [
    // The name is kept as its JSON string literal: PostgreSQL text holds neither U+0000 nor a lone
    // surrogate, and every name a client may send must come back byte for byte.
    `CREATE TABLE petstore.pets (
      id bigint PRIMARY KEY CHECK (id BETWEEN 1 AND 9007199254740991),
      name_json text NOT NULL,
      category_id bigint NOT NULL,
      status text CHECK (status IN ('available', 'pending', 'sold'))
    )`,
    'CREATE INDEX pets_status_id ON petstore.pets (status, id) WHERE status IS NOT NULL',
    // One row: the last id handed out. Its row lock, held until COMMIT, orders the creates of every instance.
    'CREATE TABLE petstore.pet_ids (one boolean PRIMARY KEY DEFAULT true CHECK (one), last_id bigint NOT NULL)',
    'INSERT INTO petstore.pet_ids (last_id) VALUES (0)',
    `CREATE TABLE petstore.api_keys (
      id text PRIMARY KEY,
      label text NOT NULL,
      created text NOT NULL,
      sha256 text NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$')
    )`,
    // Present once a key was ever created: as the key file's existence, it stops a first key from being generated
    // again.
    'CREATE TABLE petstore.api_keys_initialised (one boolean PRIMARY KEY DEFAULT true CHECK (one))',
  ],
  [
    // Idempotency keys, inserted in the pet's own transaction. The primary key is what makes one key
    // one pet across instances; rows past the window are reused or deleted by later creates.
    `CREATE TABLE petstore.idempotency_keys (
      scope text NOT NULL,
      key text NOT NULL,
      pet_id bigint NOT NULL REFERENCES petstore.pets (id),
      created_at timestamptz NOT NULL,
      PRIMARY KEY (scope, key)
    )`,
    'CREATE INDEX idempotency_keys_created_at ON petstore.idempotency_keys (created_at)',
  ],
  [
    // What a key may do: NULL scopes is every scope (the keys made before scopes existed); NULL
    // rate limit is the server's own. Adding nullable columns rewrites no row.
    `ALTER TABLE petstore.api_keys
      ADD COLUMN scopes text[] CHECK (cardinality(scopes) > 0 AND scopes <@ ARRAY['pets:read', 'pets:write']),
      ADD COLUMN rate_limit_requests integer CHECK (rate_limit_requests BETWEEN 1 AND 1000000000),
      ADD COLUMN rate_limit_seconds integer CHECK (rate_limit_seconds BETWEEN 1 AND 31622400),
      ADD CHECK ((rate_limit_requests IS NULL) = (rate_limit_seconds IS NULL))`,
  ],
  [
    // Pets are immutable in this API and every instance serves its copy in memory: a row changed
    // behind the service would be served stale, so the table refuses it (docs/postgresql.md says
    // what an operator does instead).
    `CREATE FUNCTION petstore.pets_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION '% on petstore.pets refused: pets are immutable in this API, and every instance '
        'serves its own copy of them, which would go on serving the old rows', TG_OP
        USING ERRCODE = 'restrict_violation',
          HINT = 'see "Pets cannot be changed" in docs/postgresql.md for how to remove a pet all the same';
    END
    $$`,
    `CREATE TRIGGER pets_immutable BEFORE UPDATE OR DELETE ON petstore.pets
      FOR EACH ROW EXECUTE FUNCTION petstore.pets_immutable()`,
    `CREATE TRIGGER pets_immutable_truncate BEFORE TRUNCATE ON petstore.pets
      FOR EACH STATEMENT EXECUTE FUNCTION petstore.pets_immutable()`,
  ],
  WEBHOOK_TABLES,
];

export const SCHEMA_VERSION = MIGRATIONS.length;

// Taken inside the migrating transaction, so that instances starting together migrate one at a time.
const MIGRATION_LOCK = 7_014_120_216;

export interface Migration {
  from: number;
  to: number;
}

/**
 * Brings the schema to the version `migrations` describe, in one transaction: all of it or none.
 * A database that is already current needs no privilege beyond reading and writing the tables; one
 * from a newer server is refused.
 */
export async function migrate(sql: Sql, migrations: readonly (readonly string[])[] = MIGRATIONS): Promise<Migration> {
  const target = migrations.length;
  const current = await schemaVersion(sql);
  if (current === target) return { from: current, to: current };
  refuseNewer(current, target);
  // Instances starting together migrate one at a time. The lock is taken before the transaction
  // begins, so that the transaction sees the tables another instance has just created (a lock taken
  // inside it would leave this session's catalog cache from before the wait).
  const session = await sql.reserve();
  try {
    await session`SELECT pg_advisory_lock(${MIGRATION_LOCK})`;
    try {
      return await inTransaction(session, async () => {
        await session`SET LOCAL statement_timeout = '60s'`;
        // Another instance may have migrated while this one waited for the lock.
        const from = await schemaVersion(session);
        refuseNewer(from, target);
        if (from === 0) {
          await session.unsafe('CREATE SCHEMA IF NOT EXISTS petstore');
          await session.unsafe(
            'CREATE TABLE petstore.schema_version (one boolean PRIMARY KEY DEFAULT true CHECK (one), version integer ' +
              'NOT NULL)',
          );
          await session.unsafe('INSERT INTO petstore.schema_version (version) VALUES (0)');
        }
        for (const statement of migrations.slice(from).flat()) await session.unsafe(statement);
        await session`UPDATE petstore.schema_version SET version = ${target}`;
        return { from, to: target };
      });
    } finally {
      await session`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`;
    }
  } finally {
    session.release();
  }
}

/** BEGIN, `work`, COMMIT; ROLLBACK when `work` fails. */
async function inTransaction<T>(session: ReservedSql, work: () => Promise<T>): Promise<T> {
  await session`BEGIN`;
  let result: T;
  try {
    result = await work();
  } catch (error) {
    await session`ROLLBACK`;
    throw error;
  }
  await session`COMMIT`;
  return result;
}

async function schemaVersion(sql: Sql): Promise<number> {
  const [table] = await sql<[{ exists: boolean }]>`SELECT to_regclass('petstore.schema_version') IS NOT NULL AS exists`;
  if (table?.exists !== true) return 0;
  const [row] = await sql<[{ version: number }]>`SELECT version FROM petstore.schema_version`;
  return row?.version ?? 0;
}

function refuseNewer(current: number, known: number): void {
  if (current > known) {
    throw new StoreOpenError(
      `the database schema is version ${current}, newer than this server knows (version ${known}): run a newer ` +
        `version of the server`,
    );
  }
}
