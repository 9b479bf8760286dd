import assert from 'node:assert/strict';
import { test } from 'node:test';
import { petFromJson, petJson, petsJson, readPet, type PetBytes } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { PetIndex } from '#dist/store/pet-index.js';
import { readLegacyJournal } from '#dist/store/file/records/legacy-format.js';
import { recordOfLine } from '#dist/store/file/records/record-line.js';
import { StoreOpenError } from '#dist/store/store.js';

/** The fast reader's verdict as a value: the id and status it read, or undefined when it declined. */
function readPetLine(buf: Buffer, start: number, end: number): Pick<PetBytes, 'id' | 'status'> | undefined {
  const out: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  // The callers take a line only when the pet's closing brace ends it exactly.
  const taken = readPet(buf, start, end, out, false) && buf[out.fieldsEnd] === 0x7d && out.fieldsEnd + 1 === end;
  return taken ? { id: out.id, status: out.status } : undefined;
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
  assert.equal(
    petJson(PETS[2] as Pet),
    `{"id":9007199254740991,"name":"${'x'.repeat(256)}","categoryId":9223372036854775807,"status":"sold"}`,
  );
  assert.equal(petsJson(PETS), `[${PETS.map(petJson).join(',')}]`);
  assert.equal(petsJson([]), '[]');
});

test("the line reader keeps a line in the store's own form as the pet's text, and refuses every other form", () => {
  for (const pet of PETS) {
    const line = petJson(pet);
    const buf = Buffer.from(`xx${line}\n`);
    const read = readPetLine(buf, 2, buf.length - 1);
    if (/\\/.test(line)) {
      assert.equal(read, undefined, 'escapes are left to the general parser');
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

test("a format-2 journal line carries a keyed create's record after the pet, whose text is the line without it", () => {
  const pet = { id: 9, name: 'Rex', categoryId: -7n, status: 'sold' as const };
  const record = { scope: 'AbC_-09xyzAbC_-09xyzAb', key: 'f47ac10b 58cc', at: 1764130000123 };
  const line = `${petJson(pet).slice(0, -1)},"idempotency":{"scope":"${record.scope}","key":"${record.key}","at":${record.at}}}`;
  const plain = petJson({ id: 10, name: 'Kit', categoryId: 1n });
  // A key with an escaped quote or backslash is read too, unescaped, as the general parser would.
  const escaped = line.replace(record.key, 'with \\" and \\\\ escapes').replace('"id":9', '"id":11');
  const index = new PetIndex();
  const keyed: number[] = [];
  const bytes = Buffer.from(`${line}\n${plain}\n${escaped}\n`);
  assert.equal(readLegacyJournal(bytes, 'journal', index, 0, keyed), bytes.length);
  assert.deepEqual(keyed, [9, 11]);
  assert.equal(index.getText(9)?.toString(), petJson(pet), "the pet's text is the line without its record");
  assert.deepEqual(recordOfLine(index.lineOf(9)), record);
  assert.equal(recordOfLine(index.lineOf(10)), undefined, 'a line without a record leaves none from the last one');
  assert.equal(recordOfLine(index.lineOf(11))?.key, 'with " and \\ escapes');
  for (const bad of [
    line.replace(`"at":${record.at}`, '"at":01'),
    line.replace(`"scope":"${record.scope}"`, '"scope":"no spaces allowed"'),
    line.replace(`"key":"${record.key}"`, '"key":""'),
    line.replace('}}', '},"extra":1}'),
  ]) {
    const bytes = Buffer.from(`${bad}\n`);
    assert.throws(() => readLegacyJournal(bytes, 'journal', new PetIndex(), 0, []), StoreOpenError, bad);
  }
});
