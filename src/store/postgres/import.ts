import type { Sql } from 'postgres';
import type { Pet } from '../../pet/pet.js';
import { insertKey, type KeyRecord } from './keys.js';
import { petColumns } from './pet-row.js';
import { StoreOpenError } from '../store.js';

export interface ImportResult {
  pets: number;
  lastId: number;
  keys: number;
}

// Pets sent in one statement.
const CHUNK = 1000;

/**
 * Copies pets (ascending ids, kept as they are) and key records into a database that holds no pet
 * and never handed out an id, in one transaction: the id counter continues after `handedOut`, the
 * highest id the file store may have handed out (its last pet's, or past it after an unclean stop:
 * its reservation), the count and the last pet's id are checked before COMMIT, and on any failure
 * nothing is left behind.
 */
export function importPets(
  sql: Sql,
  pets: readonly Pet[],
  keys: readonly KeyRecord[],
  handedOut = 0,
): Promise<ImportResult> {
  const lastPet = pets.at(-1)?.id ?? 0;
  const lastId = Math.max(lastPet, handedOut);
  return sql.begin(async (tx) => {
    await tx`SET LOCAL statement_timeout = '10min'`;
    const [ids] = await tx<[{ last_id: string }]>`SELECT last_id::text FROM petstore.pet_ids FOR UPDATE`;
    const [held] = await tx<[{ any: boolean }]>`SELECT EXISTS (SELECT 1 FROM petstore.pets) AS any`;
    if (ids?.last_id !== '0' || held?.any !== false) {
      throw new StoreOpenError(
        `the database already holds pets (last id ${ids?.last_id}): migrate copies only into an empty database`,
      );
    }
    for (let i = 0; i < pets.length; i += CHUNK) {
      const rows = pets.slice(i, i + CHUNK).map((p) => [p.id, ...petColumns(p)]);
      await tx`
        INSERT INTO petstore.pets (id, name_json, category_id, status)
        SELECT (p->>0)::bigint, p->>1, (p->>2)::bigint, p->>3 FROM jsonb_array_elements(${tx.json(rows)}) AS p`;
    }
    await tx`UPDATE petstore.pet_ids SET last_id = ${lastId}`;
    let added = 0;
    for (const key of keys) if (await insertKey(tx, key)) added++;
    if (keys.length > 0) await tx`INSERT INTO petstore.api_keys_initialised DEFAULT VALUES ON CONFLICT DO NOTHING`;
    const [check] = await tx<
      [{ count: string; last: string }]
    >`SELECT count(*)::text AS count, coalesce(max(id), 0)::text AS last FROM petstore.pets`;
    if (check?.count !== String(pets.length) || check.last !== String(lastPet)) {
      throw new Error(
        `verification failed: the database would hold ${check?.count} pets up to id ${check?.last}, the file store ` +
          `has ${pets.length} up to id ${lastPet}`,
      );
    }
    return { pets: pets.length, lastId, keys: added };
  });
}
