/**
 * The copy's page text (src/store/postgres/pet-texts.ts): each pet's JSON text one a line, as the
 * database builds it; eachPet finds every pet's id, status and text in it, whatever its name holds;
 * readTexts keeps the driver's buffer only when it holds little beside the page.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { petJson } from '#dist/pet/codec.js';
import { petWithId, type Pet } from '#dist/pet/pet.js';
import { eachPet, IN_PLACE_BYTES, readTexts } from '#dist/store/postgres/pet-texts.js';
import type { Sql } from 'postgres';
import { awkwardPets } from './awkward-pets.js';

function pageOf(pets: readonly Pet[]): Buffer {
  return Buffer.from(pets.map(petJson).join('\n'));
}

function read(page: Buffer): Array<{ id: number; status: string | undefined; text: string }> {
  const found: Array<{ id: number; status: string | undefined; text: string }> = [];
  const count = eachPet(page, (id, status, start, end) =>
    found.push({ id, status, text: page.toString('utf8', start, end) }),
  );
  assert.equal(count, found.length, 'the count is the pets given');
  return found;
}

test('eachPet finds every pet of a page, its id, status and exact text, over a thousand awkward names', () => {
  // Ids as the copy meets them: from 1, with gaps, and up to the largest safe integer.
  const ids = [1, 2, 9, 10, 99, 100, 12_345, 1_000_000, 2 ** 32, 2 ** 32 + 1, 2 ** 53 - 2];
  const pets = awkwardPets(1000)
    .map((p, i) => petWithId(ids[i] ?? 2 ** 40 + i, p))
    .sort((a, b) => a.id - b.id);
  pets.push(petWithId(Number.MAX_SAFE_INTEGER, { name: 'the last', categoryId: 1n, status: 'sold' }));
  const found = read(pageOf(pets));
  assert.equal(found.length, pets.length);
  for (const [i, pet] of pets.entries()) {
    assert.deepEqual(
      found[i],
      { id: pet.id, status: pet.status, text: petJson(pet) },
      `pet ${i}: ${JSON.stringify(pet.name)}`,
    );
  }
});

test('eachPet: an empty page has no pet; one pet, every status and none', () => {
  assert.deepEqual(read(Buffer.alloc(0)), []);
  for (const status of [undefined, 'available', 'pending', 'sold'] as const) {
    const pet = petWithId(5, { name: 'n', categoryId: -3n, status });
    assert.deepEqual(read(pageOf([pet])), [{ id: 5, status, text: petJson(pet) }]);
  }
});

/** A driver that answers every statement with one row holding `value`, as postgres.js's `.raw()` does. */
function answering(value: Buffer | null): Sql {
  return (() => ({ raw: async () => [[value]] })) as unknown as Sql;
}

test("readTexts keeps a large page in the driver's own buffer when that holds little else, copies it out of a larger one, and passes a small one on", async () => {
  const large = IN_PLACE_BYTES + 10;
  // As the driver joins a message's chunks: the page's text after a few header bytes, a few bytes of the next messages after it.
  const own = Buffer.alloc(large + 30, 0x61).subarray(11, 11 + large);
  assert.equal(await readTexts(answering(own), 0, 10, 10), own, 'kept: its buffer is the page and 30 bytes');
  const shared = Buffer.alloc(4 * large, 0x62).subarray(large, 2 * large);
  const copied = await readTexts(answering(shared), 0, 10, 10);
  assert.notEqual(copied.buffer, shared.buffer, 'a page inside a larger buffer is copied');
  assert.equal(copied.buffer.byteLength, large, 'into memory of its own size');
  assert.ok(copied.equals(shared));
  const small = Buffer.alloc(4 * large, 0x63).subarray(0, 100);
  assert.equal(
    await readTexts(answering(small), 0, 10, 10),
    small,
    'a small page is copied pet by pet by the arena: passed on as it is',
  );
  assert.equal((await readTexts(answering(null), 0, 10, 10)).length, 0, 'no pet: an empty Buffer');
});
