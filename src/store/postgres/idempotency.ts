import type { Sql } from 'postgres';
import { samePet, type NewPet, type Pet } from '../../pet/pet.js';
import { toPet, type PetRow } from './pet-row.js';
import { IdempotencyKeyReusedError, type IdempotencyKey } from '../store.js';

/**
 * Idempotency keys in `petstore.idempotency_keys`: the API key's identity (`scope`, a hash), the key,
 * the pet it made and when (the database's clock, the same for every instance). The pet's fields are
 * the fingerprint: pets are never changed, so the row of `pets` is what the first request sent.
 */

/** The pet `key` made within the window, if any (a committed create: other instances' too). */
export async function keyedPet(
  sql: Sql,
  { scope, key }: IdempotencyKey,
  windowSeconds: number,
): Promise<Pet | undefined> {
  const [row] = await sql<PetRow[]>`
    SELECT p.id::text, p.name_json, p.category_id::text, p.status
    FROM petstore.idempotency_keys k JOIN petstore.pets p ON p.id = k.pet_id
    WHERE k.scope = ${scope} AND k.key = ${key} AND k.created_at > now() - make_interval(secs => ${windowSeconds})`;
  return row === undefined ? undefined : toPet(row);
}

/** The answer to a repeat of the create that made `first`: its replay, or a 422 for another pet. */
export function replayOf(first: Pet, pet: NewPet): { pet: Pet; replayed: true } {
  if (!samePet(first, pet)) throw new IdempotencyKeyReusedError();
  return { pet: first, replayed: true };
}
