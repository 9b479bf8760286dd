/**
 * The pet's bytes in one place (pet/codec.ts): the writer writes what the store has always written,
 * its fast reader (checked, and trusting a checksum) and its general reader read every such text back
 * the same, and the fields are named in few modules.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { test } from 'node:test';
import { isPetText, MIN_PET_BYTES, petJson, readPet, readWrittenPet, storedPet } from '#dist/pet/codec.js';
import type { PetBytes } from '#dist/pet/codec.js';
import { PET_FIELDS, PET_STATUSES, type PetStatus } from '#dist/pet/contract.js';
import { petWithId, type Pet } from '#dist/pet/pet.js';
import { ValidationError } from '#dist/pet/validate.js';
import { parseJson } from '#dist/lib/json.js';
import { awkwardPets } from './awkward-pets.js';

const SRC = resolve(__dirname, '../../src');

/** The text as the store wrote it before the codec, spelled out here on its own. */
function expectedText(pet: Pet): string {
  const status = pet.status === undefined ? '' : `,"status":"${pet.status}"`;
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId.toString()}${status}}`;
}

/** The text as the contract's field table says it is written, whatever the fields are. */
function tableText(pet: Pet): string {
  const values = pet as unknown as Record<string, string | number | bigint | undefined>;
  const members = PET_FIELDS.flatMap(({ name, kind }) => {
    const value = values[name];
    if (value === undefined) return [];
    return [`"${name}":${kind === 'text' || kind === 'status' ? JSON.stringify(value) : value.toString()}`];
  });
  return `{${members.join(',')}}`;
}

function pets(): Pet[] {
  const ids = [1, 9, 10, 99_999, 2 ** 32, 10 ** 15, Number.MAX_SAFE_INTEGER];
  // Only names a create accepts: 1 to 256 characters.
  const valid = awkwardPets(600).filter((pet) => pet.name.length > 0 && [...pet.name].length <= 256);
  return valid.map((pet, i) => petWithId(ids[i % ids.length] as number, pet));
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

test("the writer writes the contract's fields in order, the int64 exact, no member for no status: as before", () => {
  assert.deepEqual(
    PET_FIELDS.map((field) => field.name),
    ['id', 'name', 'categoryId', 'status'],
  );
  for (const pet of pets()) {
    assert.equal(petJson(pet), expectedText(pet));
    assert.equal(petJson(pet), tableText(pet), 'the writer follows the field table');
  }
  assert.equal(Buffer.byteLength(petJson({ id: 1, name: 'a', categoryId: 0n })), MIN_PET_BYTES, 'the shortest text');
});

test('every text the writer writes reads back the same: fast reader, checked and trusting; general reader', () => {
  const out: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  let fast = 0;
  for (const pet of pets()) {
    const text = petJson(pet);
    const framed = Buffer.from(`[${text},"00000000"]`);
    assert.ok(readPet(framed, 1, framed.length, out, true), text);
    assert.deepEqual({ ...out }, { id: pet.id, status: pet.status, fieldsEnd: framed.length - 13 }, text);
    if (readPet(framed, 1, framed.length, out, false)) {
      fast++;
      assert.deepEqual({ ...out }, { id: pet.id, status: pet.status, fieldsEnd: framed.length - 13 }, text);
    } else {
      assert.match(text, /\\/, 'only a name with escapes is left to the general reader');
    }
    const general = storedPet(parseJson(text));
    assert.deepEqual(general, pet);
    assert.ok(isPetText(general, text));
  }
  assert.ok(fast >= 30, `the fast reader took ${fast}`);
});

test('the fast reader reads every status of the contract by its whole text, and refuses any other', () => {
  const out: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  for (const status of PET_STATUSES) {
    const text = Buffer.from(petJson({ id: 3, name: 'n', categoryId: 1n, status }));
    for (const trusted of [false, true]) {
      assert.ok(readPet(text, 0, text.length, out, trusted));
      assert.equal(out.status, status);
    }
    // The first letter alone does not make a status.
    const changed = Buffer.from(text.toString().replace(`"${status}"`, `"${status.slice(0, 1)}x${status.slice(2)}"`));
    for (const trusted of [false, true]) {
      assert.equal(readPet(changed, 0, changed.length, out, trusted), false, changed.toString());
    }
  }
});

test('the general reader refuses what a create refuses and an id a store never gives, naming the field', () => {
  const cases: Array<[string, RegExp]> = [
    ['{"id":1,"name":"a","categoryId":1,"colour":"red"}', /unknown field "colour"/],
    ['{"id":0,"name":"a","categoryId":1}', /field "id" must be a positive integer/],
    ['{"id":9007199254740992,"name":"a","categoryId":1}', /field "id"/],
    ['{"id":1,"name":"","categoryId":1}', /field "name"/],
    ['{"id":1,"name":"a","categoryId":9223372036854775808}', /field "categoryId"/],
    ['{"id":1,"name":"a","categoryId":1,"status":"lost"}', /field "status" must be one of available, pending, sold/],
    ['{"id":1,"name":"a","categoryId":1,"status":null}', /field "status"/],
    ['[1]', /not a JSON object/],
  ];
  for (const [text, message] of cases) {
    const refused = (e: unknown): boolean => e instanceof ValidationError && message.test(e.message);
    assert.throws(() => storedPet(parseJson(text)), refused, text);
  }
  const status: PetStatus = 'sold';
  const reordered = '{"status":"sold","categoryId":-1,"name":"a","id":2}';
  assert.deepEqual(storedPet(parseJson(reordered)), { id: 2, name: 'a', categoryId: -1n, status });
  const pet: Pet = { id: 2, name: 'a', categoryId: -1n, status };
  assert.equal(isPetText(pet, reordered), false, "another order is not the store's form");
});

test('the id and status of a text the writer wrote are read from its two ends, as the fast reader reads them', () => {
  const out: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  for (const pet of pets()) {
    const text = Buffer.from(`x${petJson(pet)}\n`);
    assert.ok(readWrittenPet(text, 1, text.length - 1, out), text.toString());
    assert.deepEqual({ id: out.id, status: out.status }, { id: pet.id, status: pet.status }, text.toString());
  }
  assert.equal(readWrittenPet(Buffer.from('{"id":,"name":"a"}'), 0, 18, out), false);
});

test("a pet's fields are known in few places: at most 8 modules of src/ name one (grep -l categoryId src)", () => {
  const naming = sourceFiles(SRC).filter((file) => readFileSync(join(SRC, file), 'utf8').includes('categoryId'));
  assert.ok(naming.length <= 8, `${naming.length} modules: ${naming.join(', ')}`);
});
