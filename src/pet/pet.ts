import type { PetStatus } from './contract.js';
import { parseJson, type JsonObject } from '../lib/json.js';

/** A pet as a client sends it (NewPet). `categoryId` is a bigint so that every int64 stays exact. */
export interface NewPet {
  name: string;
  categoryId: bigint;
  status?: PetStatus | undefined;
}

/** A stored pet. Ids are assigned by the store: 1, 2, 3, … and always safe integers. */
export interface Pet extends NewPet {
  readonly id: number;
}

/**
 * The Pet in a pet's JSON text, as petJson writes it: a plain object, `categoryId` exact. (Our own
 * parser, not JSON.parse, which would round an int64.) The text must be a valid pet's.
 */
export function petFromJson(text: string): Pet {
  const fields = parseJson(text) as JsonObject;
  const pet: Pet = { id: Number(fields['id']), name: fields['name'] as string, categoryId: fields['categoryId'] as bigint };
  if (fields['status'] !== undefined) pet.status = fields['status'] as PetStatus;
  return pet;
}

/** The stored Pet of `id` and `pet`: a plain object, without a `status` member when it has none. */
export function petWithId(id: number, pet: NewPet): Pet {
  return pet.status === undefined ? { id, name: pet.name, categoryId: pet.categoryId } : { id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}

/**
 * Serialises a Pet without a general-purpose reflection path: the field order is fixed and
 * `categoryId` is written as its exact decimal digits, which `JSON.stringify` cannot do for a bigint.
 */
export function petJson(pet: Pet): string {
  const status = pet.status === undefined ? '' : `,"status":"${pet.status}"`;
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${status}}`;
}

export function petsJson(pets: readonly Pet[]): string {
  // Joined, not concatenated: `+=` builds a rope that the socket write must flatten again.
  const parts = new Array<string>(pets.length);
  for (let i = 0; i < pets.length; i++) parts[i] = petJson(pets[i] as Pet);
  return `[${parts.join(',')}]`;
}
