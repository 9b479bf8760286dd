/**
 * A pet's stored line and its checksum (record-line.ts, lib/crc32.ts), read the careful way and the
 * trusting way (pet/codec.ts with `trusted`), which must agree on every line the store can write.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { crc32, readHex8, writeHex8 } from '#dist/lib/crc32.js';
import { petJson, readPet, type PetBytes } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { buildLine, checksumMatches, readLineTail, readRecord } from '#dist/store/file/records/record-line.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { dataDir, defer, recordLine } from './store-support.js';
import { referenceCrc32 as zlibCrc32 } from './reference-crc32.js';

test('crc32 is CRC-32 as zlib computes it, for every length up to past the switch to zlib, and chains', () => {
  assert.equal(crc32(Buffer.from('123456789')), 0xcbf43926, 'the check value of CRC-32/ISO-HDLC');
  assert.equal(crc32(Buffer.alloc(0)), 0);
  const data = randomBytes(10_000);
  for (let length = 0; length <= 5000; length += length < 64 ? 1 : 37) {
    assert.equal(crc32(data, 0, length), zlibCrc32(data.subarray(0, length)), `length ${length}`);
    assert.equal(crc32(data, 3, 3 + length), zlibCrc32(data.subarray(3, 3 + length)), `offset 3, length ${length}`);
  }
  // A file checksummed chunk by chunk, the chunks long and short, gives the checksum of the whole.
  let chained = 0;
  for (const [from, to] of [
    [0, 10],
    [10, 7000],
    [7000, 7003],
    [7003, 10_000],
  ] as const)
    chained = crc32(data, from, to, chained);
  assert.equal(chained, zlibCrc32(data));
});

test('hex checksums are written and read as 8 lower-case digits; anything else reads as -1', () => {
  const out = Buffer.alloc(8);
  writeHex8(0x0badf00d, out, 0);
  assert.equal(out.toString(), '0badf00d');
  assert.equal(readHex8(out, 0), 0x0badf00d);
  writeHex8(0xffffffff, out, 0);
  assert.equal(readHex8(out, 0), 0xffffffff);
  for (const bad of ['0BADF00D', '0badf00', '0badf00g', ' badf00d'])
    assert.equal(readHex8(Buffer.from(bad), 0), -1, bad);
});

const PETS: Pet[] = [
  { id: 1, name: 'Rex', categoryId: 7n },
  { id: 22, name: 'Zoë "Z" \\ 猫 🐕 \u0001 \u2028', categoryId: -9_223_372_036_854_775_808n, status: 'pending' },
  { id: 333, name: 'x'.repeat(256), categoryId: 9_223_372_036_854_775_807n, status: 'available' },
  { id: 9_007_199_254_740_991, name: '}],"\\', categoryId: 0n, status: 'sold' },
];
/** The line at `pos` read as a load vouched for by the file's checksum reads it, or undefined. */
function readTrusting(buf: Buffer, pos: number): Record<string, number | string | undefined> | undefined {
  const pet: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  if (buf[pos] !== 0x5b || !readPet(buf, pos + 1, buf.length, pet, true)) return undefined;
  const textEnd = pet.fieldsEnd + 1;
  const tail = buf[pet.fieldsEnd] === 0x7d ? readLineTail(buf, textEnd, buf.length) : undefined;
  if (tail === undefined) return undefined;
  const { recordStart, recordEnd, end } = tail;
  return { id: pet.id, status: pet.status, textEnd, recordStart, recordEnd, end };
}

const RECORDS = [
  undefined,
  { scope: 'a-B_9', key: 'k', at: 0 },
  { scope: 'scope', key: 'k}e"y\\] ,{"', at: 1_764_158_400_000 },
];

test('each line the store writes is read back the same, the careful way and the trusting way, with its record', () => {
  for (const pet of PETS) {
    for (const record of RECORDS) {
      const text = petJson(pet);
      const line = buildLine(text, record);
      assert.equal(line.toString(), recordLine(pet, record), 'the documented layout, made independently with zlib');
      const framed = Buffer.concat([Buffer.from('xx'), line, Buffer.from(',\n')]);
      const textEnd = 2 + 1 + Buffer.byteLength(text);
      const tail = readLineTail(framed, textEnd, framed.length);
      assert.ok(tail !== undefined);
      assert.equal(tail.end, 2 + line.length);
      assert.ok(checksumMatches(framed, 2, tail));
      assert.deepEqual(tail.recordStart < 0 ? undefined : readRecord(framed, tail.recordStart, tail.recordEnd), record);
      const trusted = readTrusting(framed, 2);
      assert.ok(trusted !== undefined, `${text} ${JSON.stringify(record)}`);
      assert.deepEqual(trusted, {
        id: pet.id,
        status: pet.status,
        textEnd,
        recordStart: tail.recordStart,
        recordEnd: tail.recordEnd,
        end: tail.end,
      });
    }
  }
});

test('a flip of any bit of a line makes its checksum not match, or the line unreadable', () => {
  const line = buildLine(petJson(PETS[1] as Pet), RECORDS[2]);
  const textEnd = 1 + Buffer.byteLength(petJson(PETS[1] as Pet));
  for (let i = 0; i < line.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const bytes = Buffer.from(line);
      bytes[i] = (bytes[i] as number) ^ (1 << bit);
      const tail = readLineTail(bytes, textEnd, bytes.length);
      assert.ok(tail === undefined || !checksumMatches(bytes, 0, tail), `byte ${i}, bit ${bit}`);
    }
  }
});

test('lines the trusting reader finds out of form are refused by it, so that the careful reader takes them', () => {
  for (const bad of [
    '{"id":1}',
    '[{"id":,"name":"a","categoryId":1},"00000000"]',
    '[{"id":99999999999999999,"name":"a","categoryId":1},"00000000"]',
    '[{"id":1,"name":"a',
    '[{"id":1,"name":"a","categoryId":1,"status":"lost"},"00000000"]',
    '[{"id":1,"name":"a","categoryId":1}]',
    '[{"id":1,"name":"a","categoryId":1},{"scope":"s"',
  ]) {
    assert.equal(readTrusting(Buffer.from(bad), 0), undefined, bad);
  }
});

test('keyed creates whose keys hold quotes, backslashes and braces are kept through a restart and a compaction', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir, { compactAfterBytes: 1 });
  const made: Pet[] = [];
  for (const [i, record] of RECORDS.entries()) {
    if (record === undefined) continue;
    made.push(
      (
        await store.createOnce(
          { name: `keyed ${i} "}"`, categoryId: BigInt(i) },
          { scope: record.scope, key: record.key },
        )
      ).pet,
    );
  }
  await store.close();
  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  for (const [i, record] of RECORDS.entries()) {
    if (record === undefined) continue;
    const again = await reopened.createOnce(
      { name: `keyed ${i} "}"`, categoryId: BigInt(i) },
      { scope: record.scope, key: record.key },
    );
    assert.equal(again.replayed, true, `key ${record.key} is remembered`);
  }
  assert.deepEqual(reopened.list({ after: 0, limit: 10 }).pets, made);
});
