import { PET_FIELDS, type NewPet, type Pet } from './contract.js';

export type { NewPet, Pet } from './contract.js';

/** The stored Pet of `id` and `pet`: a plain object, without a `status` member when it has none. */
export function petWithId(id: number, pet: NewPet): Pet {
  return pet.status === undefined
    ? { id, name: pet.name, categoryId: pet.categoryId }
    : { id, name: pet.name, categoryId: pet.categoryId, status: pet.status };
}

/** The same pet, as the client meant it: every field but the id the store gave, compared exactly. */
export function samePet(stored: Pet, pet: NewPet): boolean {
  for (const { name } of PET_FIELDS) if (name !== 'id' && stored[name] !== pet[name]) return false;
  return true;
}
