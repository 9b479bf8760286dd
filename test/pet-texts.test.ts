/**
 * The copy's page text (src/store/postgres/pet-texts.ts): each pet's JSON text one a line, as the
 * database builds it; eachPet finds every pet's id, status and text in it, whatever its name holds.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { petJson, petWithId, type Pet } from '#dist/pet/pet.js';
import { eachPet } from '#dist/store/postgres/pet-texts.js';
import { awkwardPets } from './awkward-pets.js';

function pageOf(pets: readonly Pet[]): Buffer {
  return Buffer.from(pets.map(petJson).join('\n'));
}

function read(page: Buffer): Array<{ id: number; status: string | undefined; text: string }> {
  const found: Array<{ id: number; status: string | undefined; text: string }> = [];
  const count = eachPet(page, (id, status, start, end) => found.push({ id, status, text: page.toString('utf8', start, end) }));
  assert.equal(count, found.length, 'the count is the pets given');
  return found;
}

test('eachPet finds every pet of a page, its id, status and exact text, over a thousand awkward names', () => {
  // Ids as the copy meets them: from 1, with gaps, and up to the largest safe integer.
  const ids = [1, 2, 9, 10, 99, 100, 12_345, 1_000_000, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 2];
  const pets = awkwardPets(1000).map((p, i) => petWithId(ids[i] ?? 2 ** 40 + i, p)).sort((a, b) => a.id - b.id);
  pets.push(petWithId(Number.MAX_SAFE_INTEGER, { name: 'the last', categoryId: 1n, status: 'sold' }));
  const found = read(pageOf(pets));
  assert.equal(found.length, pets.length);
  for (const [i, pet] of pets.entries()) {
    assert.deepEqual(found[i], { id: pet.id, status: pet.status, text: petJson(pet) }, `pet ${i}: ${JSON.stringify(pet.name)}`);
  }
});

test('eachPet: an empty page has no pet; one pet, every status and none', () => {
  assert.deepEqual(read(Buffer.alloc(0)), []);
  for (const status of [undefined, 'available', 'pending', 'sold'] as const) {
    const pet = petWithId(5, { name: 'n', categoryId: -3n, status });
    assert.deepEqual(read(pageOf([pet])), [{ id: 5, status, text: petJson(pet) }]);
  }
});
