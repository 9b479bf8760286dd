/** Unit tests of the validators: NewPet fields, `limit`, `status` and int64 parsing. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseJson } from '#dist/lib/json.js';
import {
  isPetStatus,
  parseInt64,
  parseLimit,
  validateCategoryId,
  validateName,
  validateNewPet,
  validateStatus,
  ValidationError,
} from '#dist/pet/validate.js';

const INT64_MAX = 9223372036854775807n;
const INT64_MIN = -9223372036854775808n;

/** Asserts a ValidationError whose message names `word`. */
function refuses(fn: () => unknown, word: string): void {
  assert.throws(fn, (error: unknown) => {
    assert.ok(error instanceof ValidationError, String(error));
    assert.equal(error.name, 'ValidationError');
    assert.match(error.message, new RegExp(`\\b${word}\\b`));
    return true;
  });
}

test('a full NewPet is accepted as given', () => {
  assert.deepEqual(validateNewPet({ name: 'Rex', categoryId: 7n, status: 'sold' }), {
    name: 'Rex',
    categoryId: 7n,
    status: 'sold',
  });
});

test('a NewPet without status has no status property', () => {
  const pet = validateNewPet({ name: 'Rex', categoryId: 7n });
  assert.deepEqual(pet, { name: 'Rex', categoryId: 7n });
  assert.equal(Object.hasOwn(pet, 'status'), false);
});

test('a NewPet parsed by parseJson (no prototype) is accepted', () => {
  assert.deepEqual(validateNewPet(parseJson('{"status":"pending","categoryId":-3,"name":"Max"}')), {
    name: 'Max',
    categoryId: -3n,
    status: 'pending',
  });
});

test('a body that is not an object is refused', () => {
  for (const body of [null, [], ['Rex'], 'Rex', 1n, 1.5, true]) refuses(() => validateNewPet(body), 'object');
});

test('an unknown field is refused by name, before other fields are checked', () => {
  refuses(() => validateNewPet({ name: 'Rex', categoryId: 7n, color: 'brown' }), 'color');
  refuses(() => validateNewPet({ color: 'brown' }), 'color');
});

test('an id field is refused: the service assigns ids', () => {
  refuses(() => validateNewPet({ id: 1n, name: 'Rex', categoryId: 7n }), 'id');
});

test('an own __proto__ field is refused as unknown', () => {
  refuses(() => validateNewPet(parseJson('{"__proto__":{},"name":"Rex","categoryId":7}')), '__proto__');
});

test('names inherited from Object.prototype are unknown fields', () => {
  refuses(() => validateNewPet(parseJson('{"constructor":1,"name":"Rex","categoryId":7}')), 'constructor');
  refuses(() => validateNewPet(parseJson('{"toString":"x","name":"Rex","categoryId":7}')), 'toString');
});

test('missing name and missing categoryId are refused by name', () => {
  refuses(() => validateNewPet({ categoryId: 7n }), 'name');
  refuses(() => validateNewPet({ name: 'Rex' }), 'categoryId');
});

test('an invalid status in a NewPet is refused by name', () => {
  refuses(() => validateNewPet({ name: 'Rex', categoryId: 7n, status: 'lost' }), 'status');
  refuses(() => validateNewPet({ name: 'Rex', categoryId: 7n, status: null }), 'status');
});

test('validateName accepts 1 to 256 characters', () => {
  assert.equal(validateName('a'), 'a');
  assert.equal(validateName('a'.repeat(256)), 'a'.repeat(256));
  assert.equal(validateName(' '), ' ');
});

test('validateName refuses a missing, empty, non-string or 257-character name', () => {
  for (const value of [undefined, '', 5n, 1.5, null, true, ['a'], 'a'.repeat(257)])
    refuses(() => validateName(value), 'name');
});

test('validateName counts code points, not UTF-16 units', () => {
  const dog = '\u{1F436}';
  assert.equal(validateName(dog.repeat(256)), dog.repeat(256));
  assert.equal(validateName('a'.repeat(255) + dog), 'a'.repeat(255) + dog);
  refuses(() => validateName(dog.repeat(257)), 'name');
  refuses(() => validateName('a'.repeat(256) + dog), 'name');
});

test('validateCategoryId keeps every int64 exactly', () => {
  for (const value of [0n, 1n, -1n, 9007199254740993n, INT64_MAX, INT64_MIN])
    assert.equal(validateCategoryId(value), value);
});

test('validateCategoryId refuses values outside int64', () => {
  refuses(() => validateCategoryId(INT64_MAX + 1n), 'categoryId');
  refuses(() => validateCategoryId(INT64_MIN - 1n), 'categoryId');
});

test('validateCategoryId refuses numbers with a fraction, an exponent or minus zero, and non-numbers', () => {
  for (const value of [1.5, 100, -0, 0, '1', true, null, undefined, [1n]])
    refuses(() => validateCategoryId(value), 'categoryId');
  for (const text of ['1.5', '1e2', '1.0', '-0']) refuses(() => validateCategoryId(parseJson(text)), 'categoryId');
});

test('isPetStatus is true exactly for the three statuses', () => {
  for (const status of ['available', 'pending', 'sold']) assert.equal(isPetStatus(status), true);
  for (const value of ['Available', 'SOLD', '', ' sold', 'lost', null, undefined, 1, ['sold']])
    assert.equal(isPetStatus(value), false);
});

test('validateStatus returns a valid status and names the field otherwise', () => {
  assert.equal(validateStatus('pending', 'status'), 'pending');
  refuses(() => validateStatus('Pending', 'query parameter "status"'), 'status');
  refuses(() => validateStatus(3, 'kind'), 'kind');
});

test('parseLimit defaults to 20 when absent', () => {
  assert.equal(parseLimit(undefined), 20);
});

test('parseLimit accepts plain decimal integers from 1 to 100', () => {
  assert.equal(parseLimit('1'), 1);
  assert.equal(parseLimit('20'), 20);
  assert.equal(parseLimit('100'), 100);
});

test('parseLimit refuses anything else', () => {
  for (const raw of [
    '0',
    '101',
    '1e1',
    '2.5',
    '',
    '-3',
    'abc',
    '+5',
    ' 5',
    '5 ',
    '0x10',
    '１０',
    '99999999999999999999',
    '100.0',
  ]) {
    refuses(() => parseLimit(raw), 'limit');
  }
});

test('parseInt64 parses decimal int64 values exactly', () => {
  assert.equal(parseInt64('0', 'petId'), 0n);
  assert.equal(parseInt64('42', 'petId'), 42n);
  assert.equal(parseInt64('-7', 'petId'), -7n);
  assert.equal(parseInt64('9223372036854775807', 'petId'), INT64_MAX);
  assert.equal(parseInt64('-9223372036854775808', 'petId'), INT64_MIN);
  // Leading zeros change nothing, however many there are.
  assert.equal(parseInt64('007', 'petId'), 7n);
  assert.equal(parseInt64('-0042', 'petId'), -42n);
  assert.equal(parseInt64('000', 'petId'), 0n);
  assert.equal(parseInt64(`${'0'.repeat(30)}9223372036854775807`, 'petId'), INT64_MAX);
  assert.equal(parseInt64(`-${'0'.repeat(30)}9223372036854775808`, 'petId'), INT64_MIN);
});

test('parseInt64 refuses values outside int64', () => {
  refuses(() => parseInt64('9223372036854775808', 'petId'), 'petId');
  refuses(() => parseInt64('-9223372036854775809', 'petId'), 'petId');
  refuses(() => parseInt64('9'.repeat(100), 'petId'), 'petId');
});

test('parseInt64 refuses what is not a decimal integer, naming what was parsed', () => {
  for (const raw of ['', 'abc', '1.5', '1e3', '+1', ' 1', '1 ', '0x1', '-', '--1', '１'])
    refuses(() => parseInt64(raw, 'after'), 'after');
});
