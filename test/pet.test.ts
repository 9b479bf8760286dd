import assert from 'node:assert/strict';
import { test } from 'node:test';
import { petFromJson, petJson, petsJson, type Pet } from '#dist/pet/pet.js';
import { readPetLine as readLine, type PetLine } from '#dist/store/file/pet-line.js';

/** The line reader's verdict as a value: the id and status it read, or undefined when it declined. */
function readPetLine(buf: Buffer, start: number, end: number): Pick<PetLine, 'id' | 'status'> | undefined {
  const out: PetLine = { id: 0, status: undefined, end: 0 };
  // The callers take a line only when the pet ends exactly where the line does.
  return readLine(buf, start, end, out) && out.end === end ? { id: out.id, status: out.status } : undefined;
}

const PETS: Pet[] = [
  { id: 1, name: 'Rex', categoryId: 7n, status: 'available' },
  { id: 2, name: 'Émile "the cat" \u2028 🐈 \\ \n', categoryId: -(2n ** 63n) },
  { id: 9007199254740991, name: 'x'.repeat(256), categoryId: 2n ** 63n - 1n, status: 'sold' },
  { id: 4, name: 'Ünïcode 名前', categoryId: -0n, status: 'pending' },
];

test('petFromJson reads back exactly the pet petJson wrote, as a plain object', () => {
  for (const pet of PETS) {
    const back = petFromJson(petJson(pet));
    assert.deepEqual(back, pet.status === undefined ? { id: pet.id, name: pet.name, categoryId: pet.categoryId } : pet);
    assert.equal(petJson(back), petJson(pet));
  }
  assert.equal(petJson(PETS[0] as Pet), '{"id":1,"name":"Rex","categoryId":7,"status":"available"}');
  assert.equal(petJson(PETS[2] as Pet), `{"id":9007199254740991,"name":"${'x'.repeat(256)}","categoryId":9223372036854775807,"status":"sold"}`);
  assert.equal(petsJson(PETS), `[${PETS.map(petJson).join(',')}]`);
  assert.equal(petsJson([]), '[]');
});

test('the line reader keeps a line in the store\'s own form as the pet\'s text, and refuses every other form', () => {
  for (const pet of PETS) {
    const line = petJson(pet);
    const buf = Buffer.from(`xx${line}\n`);
    const read = readPetLine(buf, 2, buf.length - 1);
    if (/\\/.test(line) || String(pet.id).length > 15) {
      assert.equal(read, undefined, 'escapes and ids of 16 digits are left to the general parser');
      continue;
    }
    assert.deepEqual(read, { id: pet.id, status: pet.status });
  }
  for (const line of [
    '{"id":1,"name":"Rex","categoryId":07}',
    '{"id":1,"name":"Rex","categoryId":-0}',
    '{"id":1,"name":"Rex","categoryId":9223372036854775808}',
    '{"id":1,"name":"Rex","categoryId":-9223372036854775809}',
    '{"id":1,"name":"","categoryId":1}',
    '{"id":01,"name":"Rex","categoryId":1}',
    '{"id":1,"name":"Rex","categoryId":1,"status":"lost"}',
    '{"id":1, "name":"Rex","categoryId":1}',
    '{"id":1,"name":"Rex","categoryId":1} ',
  ]) {
    const buf = Buffer.from(line);
    assert.equal(readPetLine(buf, 0, buf.length), undefined, line);
  }
});

test('the line reader counts a name in UTF-16 units from its UTF-8 bytes, as the length limit is checked', () => {
  const line = (name: string): Buffer => Buffer.from(petJson({ id: 1, name, categoryId: 1n }));
  const fits = line(`${'é'.repeat(200)}${'x'.repeat(54)}🐈`); // 256 units: 200 two-byte, 54 one-byte, one pair
  assert.deepEqual(readPetLine(fits, 0, fits.length), { id: 1, status: undefined });
  // 257 UTF-16 units (256 characters): left to the general parser, which counts characters.
  const over = line(`${'x'.repeat(255)}🐈`);
  assert.equal(readPetLine(over, 0, over.length), undefined);
  const long = line('名'.repeat(257));
  assert.equal(readPetLine(long, 0, long.length), undefined);
});
