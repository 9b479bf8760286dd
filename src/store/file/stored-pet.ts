import type { JsonValue } from '../../lib/json.js';
import { petJson, type NewPet, type Pet } from '../../pet/pet.js';
import { validateCategoryId, validateName, validateStatus, ValidationError } from '../../pet/validate.js';

/**
 * A pet as read back from a data file by the general parser (integers are bigints): the same rules
 * as a create, plus an id that is a safe positive integer. `extra` names one more member a line of
 * an older format may carry (its idempotency record), which is left to the caller.
 */
export function storedPet(value: JsonValue, extra?: string): Pet {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new ValidationError('not a JSON object');
  for (const key of Object.keys(value)) {
    if (key !== 'id' && key !== 'name' && key !== 'categoryId' && key !== 'status' && key !== extra) throw new ValidationError(`unknown field "${key}"`);
  }
  const id = value['id'];
  if (typeof id !== 'bigint' || id < 1n || id > BigInt(Number.MAX_SAFE_INTEGER)) throw new ValidationError('field "id" must be a positive integer');
  const pet: Pet = { id: Number(id), name: validateName(value['name']), categoryId: validateCategoryId(value['categoryId']) };
  if (value['status'] !== undefined) pet.status = validateStatus(value['status'], 'field "status"');
  return pet;
}

/** Whether `text` is exactly the text the API answers for `pet`, so that it can be served as it is. */
export function isPetText(pet: Pet, text: string): boolean {
  return petJson(pet) === text;
}

/** The same pet, as the client meant it: name, the exact categoryId digits and status. */
export function samePet(stored: Pet, pet: NewPet): boolean {
  return stored.name === pet.name && stored.categoryId === pet.categoryId && stored.status === pet.status;
}
