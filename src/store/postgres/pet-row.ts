import type { PetStatus } from '../../pet/contract.js';
import { petWithId, type NewPet, type Pet } from '../../pet/pet.js';

/** A pet as a query selects it: `id::text, name_json, category_id::text, status`. */
export interface PetRow {
  id: string;
  name_json: string;
  category_id: string;
  status: PetStatus | null;
}

export function toPet(row: PetRow): Pet {
  const name = JSON.parse(row.name_json) as string;
  return petWithId(Number(row.id), { name, categoryId: BigInt(row.category_id), status: row.status ?? undefined });
}

/**
 * The columns a pet is inserted with, `name_json, category_id, status`, as JSON carries every field
 * exactly: the name as its JSON literal, the int64 as its decimal digits.
 */
export function petColumns(pet: NewPet): [string, string, PetStatus | null] {
  return [JSON.stringify(pet.name), pet.categoryId.toString(), pet.status ?? null];
}
