import type { Sql } from 'postgres';
import type { NewPet } from '../../pet/pet.js';
import { petColumns } from './pet-row.js';
import type { IdempotencyKey } from '../store.js';

/** A create waiting for its commit, and the idempotency key it was made with, if any. */
export interface BatchEntry {
  pet: NewPet;
  key: IdempotencyKey | undefined;
}

/** What a batch's statement did: entry `i` got id `base + i + 1`, unless its key was already taken. */
export interface BatchResult {
  base: number;
  /** Ids of keyed entries that were stored; a keyed entry whose id is not here stored nothing. */
  keyedIds: ReadonlySet<number>;
}

// Expired idempotency keys deleted by one batch at most, so that a batch never pays for a long backlog.
const EXPIRED_PER_BATCH = 100;

/** The channel every batch NOTIFYs with the highest id it took; delivered to listeners at its COMMIT. */
export const COMMIT_CHANNEL = 'petstore_pets';

/**
 * Stores a batch in one statement, so one implicit transaction. The ids are taken first, under the
 * row lock of `pet_ids`, held until the COMMIT that makes the pets visible: creates of all instances
 * commit one batch at a time, in id order.
 *
 * A keyed entry's key is inserted beside its pet; its pet is inserted only if the key was free, or
 * taken by a create past the window (that row is then reused). The unique (scope, key) is checked
 * under the same lock, against every COMMIT before it, so two instances never store one key twice:
 * the later one stores nothing and its id is skipped. Up to EXPIRED_PER_BATCH expired keys are
 * deleted on the way, but never one of this batch (a row is changed at most once per statement).
 * The statement NOTIFYs COMMIT_CHANNEL with its highest id: every instance listening learns of the
 * pets at their COMMIT, in commit order, which is id order. Resolves to undefined, storing nothing,
 * when the ids are exhausted, or when the counter is below `floor`, an id the caller saw committed:
 * the database went back (rewind.ts), and the ids after the counter were acknowledged before.
 */
export async function insertBatch(
  sql: Sql,
  batch: readonly BatchEntry[],
  windowSeconds: number,
  floor: number,
): Promise<BatchResult | undefined> {
  const count = batch.length;
  const rows = batch.map(({ pet, key }) => [...petColumns(pet), key?.scope ?? null, key?.key ?? null]);
  const [row] = await sql<[{ base: string; keyed: string | null }?]>`
    WITH ids AS (
      UPDATE petstore.pet_ids SET last_id = last_id + ${count}
      WHERE last_id + ${count} <= 9007199254740991 AND last_id >= ${floor}
      RETURNING last_id - ${count} AS base
    ), batch AS (
      SELECT ids.base + p.n AS id, p.pet->>0 AS name_json, (p.pet->>1)::bigint AS category_id, p.pet->>2 AS status,
        p.pet->>3 AS scope, p.pet->>4 AS key
      FROM ids, jsonb_array_elements(${sql.json(rows)}) WITH ORDINALITY AS p(pet, n)
    ), keyed AS (
      INSERT INTO petstore.idempotency_keys AS k (scope, key, pet_id, created_at)
      SELECT scope, key, id, now() FROM batch WHERE key IS NOT NULL
      ON CONFLICT (scope, key) DO UPDATE SET pet_id = excluded.pet_id, created_at = excluded.created_at
      WHERE k.created_at <= now() - make_interval(secs => ${windowSeconds})
      RETURNING pet_id
    ), stored AS (
      INSERT INTO petstore.pets (id, name_json, category_id, status)
      SELECT id, name_json, category_id, status FROM batch
      WHERE key IS NULL OR id IN (SELECT pet_id FROM keyed)
    ), expired AS (
      -- The age is tested on k itself: a row another instance renewed since this statement began is kept.
      DELETE FROM petstore.idempotency_keys AS k
      USING (
        SELECT scope, key FROM petstore.idempotency_keys, ids
        WHERE created_at <= now() - make_interval(secs => ${windowSeconds})
        ORDER BY created_at LIMIT ${EXPIRED_PER_BATCH}
      ) AS old
      WHERE k.scope = old.scope AND k.key = old.key AND k.created_at <= now() - make_interval(secs => ${windowSeconds})
        AND NOT EXISTS (SELECT 1 FROM batch WHERE batch.scope = k.scope AND batch.key = k.key)
    )
    SELECT base::text, (SELECT string_agg(pet_id::text, ',') FROM keyed) AS keyed,
      pg_notify(${COMMIT_CHANNEL}, (base + ${count})::text) AS notified
    FROM ids`;
  if (row === undefined) return undefined;
  return { base: Number(row.base), keyedIds: new Set(row.keyed === null ? [] : row.keyed.split(',').map(Number)) };
}
