import type { PetStatus } from '../../pet/contract.js';
import { petWithId, type Pet } from '../../pet/pet.js';

/** A pet as a query selects it: `id::text, name_json, category_id::text, status`. */
export interface PetRow {
  id: string;
  name_json: string;
  category_id: string;
  status: PetStatus | null;
}

export function toPet(row: PetRow): Pet {
  return plainPet(Number(row.id), JSON.parse(row.name_json) as string, BigInt(row.category_id), row.status ?? undefined);
}

/** A Pet as a plain object, without a `status` member when it has none (as petJson writes it). */
export function plainPet(id: number, name: string, categoryId: bigint, status: PetStatus | undefined): Pet {
  return petWithId(id, { name, categoryId, status });
}
