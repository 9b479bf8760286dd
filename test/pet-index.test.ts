import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PetIndex } from '#dist/store/pet-index.js';
import { petJson } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { buildLine } from '#dist/store/file/records/record-line.js';
import type { PetStatus } from '#dist/pet/contract.js';

const STATUSES: readonly PetStatus[] = ['available', 'pending', 'sold'];

function pet(id: number, status?: PetStatus): Pet {
  return status === undefined
    ? { id, name: `pet ${id}`, categoryId: BigInt(id * 10) }
    : { id, name: `pet ${id}`, categoryId: BigInt(id * 10), status };
}

/** Adds a pet as the store does: its line, made for its text, copied in. */
function add(index: PetIndex, p: Pet): void {
  const text = petJson(p);
  const line = buildLine(text, undefined);
  index.appendLine(p.id, p.status, line, 0, line.length, 1, 1 + Buffer.byteLength(text));
}

function indexOf(pets: readonly Pet[]): PetIndex {
  const index = new PetIndex();
  for (const p of pets) add(index, p);
  return index;
}

const ids = (pets: readonly Pet[]): number[] => pets.map((p) => p.id);
const all = (index: PetIndex): Pet[] => [...index.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets];

test('an empty index has no pets, last id 0, and empty pages', () => {
  const index = new PetIndex();
  assert.equal(index.size, 0);
  assert.equal(index.lastId, 0);
  assert.deepEqual(all(index), []);
  assert.equal(index.get(1), undefined);
  assert.deepEqual(index.list({ after: 0, limit: 10 }), { pets: [], more: false });
  assert.deepEqual(index.list({ after: 0, limit: 10, status: 'sold' }), { pets: [], more: false });
});

test('append keeps pets in id order and refuses an id that is not above the last', () => {
  const index = indexOf([pet(1), pet(2, 'sold'), pet(7)]);
  assert.equal(index.size, 3);
  assert.equal(index.lastId, 7);
  assert.deepEqual(ids(all(index)), [1, 2, 7]);
  assert.throws(() => add(index, pet(7)), RangeError);
  assert.throws(() => add(index, pet(3, 'sold')), RangeError);
  // A refused append changes nothing, in the full list nor in the status list.
  assert.equal(index.size, 3);
  assert.deepEqual(ids(index.list({ after: 0, limit: 10, status: 'sold' }).pets), [2]);
  add(index, pet(8));
  assert.deepEqual(ids(all(index)), [1, 2, 7, 8]);
});

test('get finds a pet by id and answers undefined for ids in gaps, below and above', () => {
  const index = indexOf([pet(2), pet(3, 'pending'), pet(10), pet(11), pet(40, 'sold')]);
  for (const id of [2, 3, 10, 11, 40]) assert.equal(index.get(id)?.id, id);
  assert.deepEqual(index.get(3), pet(3, 'pending'));
  for (const id of [0, 1, 4, 9, 12, 39, 41, Number.MAX_SAFE_INTEGER, -1])
    assert.equal(index.get(id), undefined, `id ${id}`);
});

test('list pages ascending by id with an exclusive cursor and tells whether more follow', () => {
  const index = indexOf([1, 2, 3, 5, 8, 13, 21].map((id) => pet(id)));
  assert.deepEqual(ids(index.list({ after: 0, limit: 3 }).pets), [1, 2, 3]);
  assert.equal(index.list({ after: 0, limit: 3 }).more, true);
  assert.deepEqual(ids(index.list({ after: 3, limit: 3 }).pets), [5, 8, 13]);
  // A cursor that is not an existing id starts at the next larger one.
  assert.deepEqual(ids(index.list({ after: 4, limit: 2 }).pets), [5, 8]);
  assert.deepEqual(index.list({ after: 13, limit: 1 }), { pets: [pet(21)], more: false });
  // Exactly the remaining count: no further page.
  assert.deepEqual(index.list({ after: 8, limit: 2 }), { pets: [pet(13), pet(21)], more: false });
  assert.deepEqual(index.list({ after: 21, limit: 5 }), { pets: [], more: false });
  assert.deepEqual(index.list({ after: 1000, limit: 5 }), { pets: [], more: false });
  assert.deepEqual(ids(index.list({ after: 0, limit: 100 }).pets), [1, 2, 3, 5, 8, 13, 21]);
});

test('list by status holds only pets of that status, in id order, with the same cursor rules', () => {
  const index = indexOf([
    pet(1, 'available'),
    pet(2),
    pet(3, 'sold'),
    pet(4, 'available'),
    pet(5, 'pending'),
    pet(6, 'available'),
    pet(7, 'sold'),
  ]);
  assert.deepEqual(ids(index.list({ after: 0, limit: 10, status: 'available' }).pets), [1, 4, 6]);
  assert.deepEqual(ids(index.list({ after: 0, limit: 10, status: 'sold' }).pets), [3, 7]);
  assert.deepEqual(ids(index.list({ after: 0, limit: 10, status: 'pending' }).pets), [5]);
  assert.deepEqual(index.list({ after: 0, limit: 2, status: 'available' }), {
    pets: [pet(1, 'available'), pet(4, 'available')],
    more: true,
  });
  assert.deepEqual(index.list({ after: 4, limit: 2, status: 'available' }), {
    pets: [pet(6, 'available')],
    more: false,
  });
  assert.deepEqual(index.list({ after: 2, limit: 1, status: 'available' }), {
    pets: [pet(4, 'available')],
    more: true,
  });
  assert.deepEqual(index.list({ after: 7, limit: 5, status: 'sold' }), { pets: [], more: false });
  // A pet without status is in no status list, but in the full one.
  assert.equal(index.get(2)?.status, undefined);
  assert.deepEqual(ids(index.list({ after: 1, limit: 1 }).pets), [2]);
});

test('paging through a large index with every limit and status yields exactly the filtered pets', () => {
  // Deterministic pseudo-random ids with gaps and statuses.
  let seed = 12345;
  const next = (): number => (seed = (seed * 1103515245 + 12345) % 2147483648);
  const pets: Pet[] = [];
  let id = 0;
  for (let i = 0; i < 3000; i++) {
    id += 1 + (next() % 4);
    const s = next() % 4;
    pets.push(pet(id, s === 3 ? undefined : STATUSES[s]));
  }
  const index = indexOf(pets);
  for (const status of [undefined, ...STATUSES]) {
    const expected = ids(pets.filter((p) => status === undefined || p.status === status));
    for (const limit of [1, 7, 100]) {
      const seen: number[] = [];
      let after = 0;
      for (;;) {
        const page = index.list({ after, limit, status });
        assert.ok(page.pets.length <= limit);
        seen.push(...ids(page.pets));
        if (!page.more) break;
        assert.equal(page.pets.length, limit);
        after = page.pets.at(-1)?.id ?? assert.fail('a page with more has pets');
      }
      assert.deepEqual(seen, expected, `status ${status ?? 'any'}, limit ${limit}`);
    }
  }
});

test('reads give plain Pet objects and, for the HTTP answers, the exact JSON text of a pet or a page', () => {
  const index = indexOf([pet(1, 'sold'), { id: 2, name: 'Zoë 🐕 "q"', categoryId: -(2n ** 63n) }, pet(3)]);
  const got = index.get(2) as Pet;
  assert.equal(Object.getPrototypeOf(got), Object.prototype, 'a plain object');
  assert.deepEqual(got, { id: 2, name: 'Zoë 🐕 "q"', categoryId: -(2n ** 63n) });
  const text = (id: number): string | undefined => index.getText(id)?.toString();
  assert.equal(text(2), '{"id":2,"name":"Zoë 🐕 \\"q\\"","categoryId":-9223372036854775808}');
  assert.equal(index.getText(4), undefined);
  const page = index.listText({ after: 0, limit: 2 });
  assert.deepEqual({ ...page, json: page.json.toString() }, { json: `[${text(1)},${text(2)}]`, lastId: 2, more: true });
  const none = index.listText({ after: 0, limit: 5, status: 'pending' });
  assert.deepEqual({ ...none, json: none.json.toString() }, { json: '[]', lastId: undefined, more: false });
  const lines: Array<[number, string]> = [];
  for (const l of index.lines(2)) lines.push([l.id, l.bytes.toString('utf8', l.textStart - 1, l.textEnd + 12)]); // one object, reused
  assert.deepEqual(
    lines,
    [1, 2].map((id) => [id, buildLine(text(id) as string, undefined).toString()]),
    "each pet's whole line",
  );
});

test('get finds every pet across gaps in the ids (ids of failed commits are never reused) and nothing else', () => {
  const index = new PetIndex();
  const ids = [1, 2, 5, 6, 9, 40];
  for (const id of ids) add(index, { id, name: `p${id}`, categoryId: BigInt(id) });
  for (let id = -1; id <= 41; id++) {
    assert.equal(index.get(id)?.id, ids.includes(id) ? id : undefined, `id ${id}`);
  }
  assert.deepEqual(
    index.list({ after: 3, limit: 2 }).pets.map((p) => p.id),
    [5, 6],
  );
  assert.deepEqual(
    index.list({ after: -5, limit: 1 }).pets.map((p) => p.id),
    [1],
  );
});
