import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PetArena, statusCode, type StatusCode } from '#dist/store/pet-arena.js';

/** Copies a text in as a whole line of its own (what the arena keeps around a text is tested below). */
function copyText(arena: PetArena, id: number, status: StatusCode, bytes: Buffer, start = 0, end = bytes.length): void {
  arena.append(id, status, bytes, start, end, start, end);
}

const text = (id: number, name: string, status?: string): string =>
  `{"id":${id},"name":${JSON.stringify(name)},"categoryId":${id * 7}${status === undefined ? '' : `,"status":"${status}"`}}`;

function fill(
  arena: PetArena,
  ids: readonly number[],
  name: (id: number) => string,
  status: (id: number) => string | undefined,
): Map<number, string> {
  const texts = new Map<number, string>();
  for (const id of ids) {
    const s = status(id);
    const t = text(id, name(id), s);
    texts.set(id, t);
    copyText(arena, id, statusCode(s as never), Buffer.from(t));
  }
  return texts;
}

test("each pet's text comes back byte for byte, across chunk boundaries and with multi-byte names", () => {
  const arena = new PetArena();
  // About 3 MiB of pets: several 1 MiB chunks, with names of 1-, 2-, 3- and 4-byte characters.
  const names = ['Rex', 'Zoë', '猫', '🐕 dog', 'x'.repeat(256), '🐈'.repeat(256)];
  const ids = Array.from({ length: 6000 }, (_, i) => i + 1);
  const texts = fill(
    arena,
    ids,
    (id) => `${names[id % names.length]} ${id}`,
    () => undefined,
  );
  assert.equal(arena.size, ids.length);
  for (const id of ids) {
    const at = arena.positionOf(id);
    assert.equal(arena.textAt(at).toString('utf8'), texts.get(id), `pet ${id}`);
  }
  // Pages of pets from every chunk, and one that spans them all: each pet's bytes come from its own chunk.
  for (let start = 0; start < ids.length; start += 997) {
    const positions = Array.from({ length: Math.min(20, ids.length - start) }, (_, i) => start + i);
    assert.equal(
      arena.jsonArray(positions).toString(),
      `[${positions.map((p) => texts.get(p + 1)).join(',')}]`,
      `page at ${start}`,
    );
  }
  const spread = [0, 1999, 2999, 3999, 5999];
  assert.equal(arena.jsonArray(spread).toString(), `[${spread.map((p) => texts.get(p + 1)).join(',')}]`);
});

test('a text that does not fit the rest of a chunk starts the next one whole', () => {
  const arena = new PetArena();
  const big = 'n'.repeat(200);
  const ids = Array.from({ length: 8000 }, (_, i) => i + 1); // 8,000 × ~240 bytes: crosses 1 MiB
  const texts = fill(
    arena,
    ids,
    () => big,
    () => undefined,
  );
  let crossed = false;
  for (const id of ids) {
    const view = arena.textAt(arena.positionOf(id));
    assert.equal(view.toString(), texts.get(id));
    if (id > 1 && view.byteOffset === 0) crossed = true;
  }
  assert.ok(crossed, 'some pet starts a new chunk');
});

test('positionOf finds ids with gaps (ids used up by failed creates) and answers -1 for the rest', () => {
  const arena = new PetArena();
  const ids = [1, 2, 3, 7, 8, 20, 21, 1000];
  fill(
    arena,
    ids,
    (id) => `p${id}`,
    () => undefined,
  );
  for (const [position, id] of ids.entries()) assert.equal(arena.positionOf(id), position);
  for (const missing of [0, 4, 6, 9, 19, 22, 999, 1001, -1])
    assert.equal(arena.positionOf(missing), -1, String(missing));
  assert.equal(new PetArena().positionOf(1), -1);
  assert.equal(arena.lastId, 1000);
});

test('a page starts after the cursor, holds at most limit pets, says whether more follow, and filters by status', () => {
  const arena = new PetArena();
  const statuses = [undefined, 'available', 'pending', 'sold'];
  const ids = Array.from({ length: 50 }, (_, i) => i * 2 + 1); // odd ids 1..99
  fill(
    arena,
    ids,
    (id) => `p${id}`,
    (id) => statuses[id % 4],
  );
  const idsOf = (page: { positions: number[] }): number[] => page.positions.map((p) => arena.idAt(p));
  assert.deepEqual(idsOf(arena.page(0, 3, 0)), [1, 3, 5]);
  assert.deepEqual(idsOf(arena.page(4, 3, 0)), [5, 7, 9]);
  assert.deepEqual(arena.page(95, 3, 0), { positions: [48, 49], more: false });
  assert.equal(arena.page(0, 49, 0).more, true);
  assert.equal(arena.page(0, 50, 0).more, false);
  const sold = (id: number): boolean => statuses[id % 4] === 'sold';
  const expected = ids.filter(sold);
  assert.deepEqual(idsOf(arena.page(0, 100, 3 as StatusCode)), expected);
  assert.deepEqual(idsOf(arena.page(expected[2] as number, 2, 3 as StatusCode)), expected.slice(3, 5));
  assert.deepEqual(arena.page(1000, 10, 1), { positions: [], more: false });
});

test('jsonArray joins the texts of a page into one JSON array', () => {
  const arena = new PetArena();
  const texts = fill(
    arena,
    [1, 2, 3],
    (id) => ['Rex', 'Zoë', '🐕'][id - 1] as string,
    () => 'sold',
  );
  assert.equal(arena.jsonArray([0, 1, 2]).toString(), `[${[...texts.values()].join(',')}]`);
  assert.equal(arena.jsonArray([]).toString(), '[]');
  assert.deepEqual(JSON.parse(arena.jsonArray([1]).toString()), [
    { id: 2, name: 'Zoë', categoryId: 14, status: 'sold' },
  ]);
});

test('jsonArray copies pets kept in a Buffer that starts partway into its memory (as pooled Buffers do)', () => {
  const arena = new PetArena();
  const first = text(1, 'Rex', 'sold');
  const second = text(2, 'Zoë');
  const memory = Buffer.from(`garbage before the file|${first}\n${second}\n`);
  const file = memory.subarray('garbage before the file|'.length);
  assert.notEqual(file.byteOffset, 0);
  arena.appendInPlace(1, statusCode('sold'), file, 0, Buffer.byteLength(first));
  arena.appendInPlace(2, 0, file, Buffer.byteLength(first) + 1, file.length - 1);
  assert.equal(arena.jsonArray([0, 1]).toString(), `[${first},${second}]`);
  assert.equal(arena.jsonArray([1]).toString(), `[${second}]`);
});

test('ids must rise: an id at or below the last one is refused', () => {
  const arena = new PetArena();
  copyText(arena, 5, 0, Buffer.from(text(5, 'a')));
  assert.throws(() => copyText(arena, 5, 0, Buffer.from(text(5, 'b'))), RangeError);
  assert.throws(() => copyText(arena, 4, 0, Buffer.from(text(4, 'b'))), RangeError);
  assert.equal(arena.size, 1);
});

test('many statuses and pets grow the typed arrays without losing any', () => {
  const arena = new PetArena();
  const ids = Array.from({ length: 20_000 }, (_, i) => i + 1);
  fill(
    arena,
    ids,
    (id) => `p${id}`,
    (id) => (id % 3 === 0 ? 'pending' : undefined),
  );
  const pending = arena.page(0, 100_000, statusCode('pending')).positions.map((p) => arena.idAt(p));
  assert.deepEqual(
    pending,
    ids.filter((id) => id % 3 === 0),
  );
  assert.equal(arena.positionOf(20_000), 19_999);
});

test('pets kept in place and copied pets may alternate without a new chunk for each (keyed lines are copied)', () => {
  const arena = new PetArena();
  const file = Buffer.from(Array.from({ length: 2000 }, (_, i) => text(2 * i + 1, `kept ${i}`)).join('\n'));
  let at = 0;
  for (let i = 0; i < 2000; i++) {
    const end = file.indexOf(0x0a, at) === -1 ? file.length : file.indexOf(0x0a, at);
    arena.appendInPlace(2 * i + 1, 0, file, at, end);
    copyText(arena, 2 * i + 2, 0, Buffer.from(text(2 * i + 2, `copied ${i}`)));
    at = end + 1;
  }
  assert.equal(arena.size, 4000);
  for (let id = 1; id <= 4000; id++) {
    const expected = id % 2 === 1 ? text(id, `kept ${(id - 1) / 2}`) : text(id, `copied ${id / 2 - 1}`);
    assert.equal(arena.textAt(arena.positionOf(id)).toString(), expected, `pet ${id}`);
  }
  // About 110 KB of copies: a chunk of 64 KiB, then one of 128 KiB, not a chunk for each pet.
  const copies = new Set(Array.from({ length: 2000 }, (_, i) => arena.textAt(arena.positionOf(2 * i + 2)).buffer));
  assert.equal(copies.size, 2, 'the copied pets share two chunks');
  assert.equal(arena.textAt(arena.positionOf(1)).buffer, file.buffer, 'a kept pet is a view of the file itself');
});

test('ids 2^32 and more above the first one are kept exactly, up to the largest safe integer', () => {
  const arena = new PetArena();
  const first = 5;
  const ids = [
    first,
    first + 1,
    first + 2 ** 32 - 1,
    first + 2 ** 32,
    first + 2 ** 32 + 1,
    2 ** 40,
    Number.MAX_SAFE_INTEGER - 1,
    Number.MAX_SAFE_INTEGER,
  ];
  const texts = fill(
    arena,
    ids,
    (id) => `p${id}`,
    (id) => (id % 2 === 0 ? 'sold' : undefined),
  );
  assert.equal(arena.lastId, Number.MAX_SAFE_INTEGER);
  for (const [position, id] of ids.entries()) {
    assert.equal(arena.positionOf(id), position, String(id));
    assert.equal(arena.idAt(position), id);
    assert.equal(arena.textAt(position).toString(), texts.get(id));
  }
  for (const missing of [
    first - 1,
    first + 2,
    2 ** 32,
    first + 2 ** 32 + 2,
    2 ** 40 - 1,
    Number.MAX_SAFE_INTEGER - 2,
  ]) {
    assert.equal(arena.positionOf(missing), -1, String(missing));
  }
  const idsOf = (page: { positions: number[] }): number[] => page.positions.map((p) => arena.idAt(p));
  assert.deepEqual(idsOf(arena.page(first + 1, 3, 0)), ids.slice(2, 5));
  assert.deepEqual(idsOf(arena.page(first + 2 ** 32, 10, 0)), ids.slice(4));
  assert.deepEqual(
    idsOf(arena.page(0, 10, statusCode('sold'))),
    ids.filter((id) => id % 2 === 0),
  );
  assert.deepEqual(idsOf(arena.page(2 ** 40, 10, statusCode('sold'))), [Number.MAX_SAFE_INTEGER - 1]);
  assert.throws(() => copyText(arena, Number.MAX_SAFE_INTEGER, 0, Buffer.from(text(1, 'again'))), RangeError);
});

test('ids far above 2^32 from the start are kept exactly, and dense ones found at their place', () => {
  const arena = new PetArena();
  const first = 2 ** 52;
  const ids = Array.from({ length: 3000 }, (_, i) => first + i + (i >= 1500 ? 7 : 0));
  fill(
    arena,
    ids,
    (id) => `p${id}`,
    () => undefined,
  );
  for (const [position, id] of ids.entries()) assert.equal(arena.positionOf(id), position, String(id));
  assert.equal(arena.positionOf(first + 1500), -1);
  assert.equal(arena.positionOf(first - 1), -1);
  assert.equal(arena.lastId, first + 3006);
});

test('texts kept in place in many Buffers come back whole past 256 and 65,536 of them', () => {
  const arena = new PetArena();
  // One Buffer per pet, as if each were a file of its own: chunk numbers need 8, then 16, then 32 bits.
  const count = 65_536 + 300;
  for (let id = 1; id <= count; id++) {
    const bytes = Buffer.from(`,${text(id, `Zoë ${id}`)}\n`);
    if (id % 1000 === 0)
      copyText(arena, id, 0, bytes, 1, bytes.length - 1); // a copied pet now and then
    else arena.appendInPlace(id, 0, bytes, 1, bytes.length - 1);
  }
  assert.equal(arena.size, count);
  for (let id = 1; id <= count; id++) {
    assert.equal(arena.textAt(arena.positionOf(id)).toString(), text(id, `Zoë ${id}`), `pet ${id}`);
  }
  // A page across Buffers numbered past 256 and 65,536, copied and kept ones alike.
  const positions = [0, 255, 256, 999, 1000, 65_535, 65_536, count - 1];
  assert.equal(
    arena.jsonArray(positions).toString(),
    `[${positions.map((p) => text(p + 1, `Zoë ${p + 1}`)).join(',')}]`,
  );
});

test('a copied line is kept whole around its text, and the text is served from within it', () => {
  const arena = new PetArena();
  const lines = [1, 2, 3].map((id) => Buffer.from(`[${text(id, `p${id}`)},"0000000${id}"]`));
  for (const [i, line] of lines.entries()) arena.append(i + 1, 0, line, 0, line.length, 1, line.length - 12);
  for (const [position, line] of lines.entries()) {
    assert.equal(arena.textAt(position).toString(), text(position + 1, `p${position + 1}`));
    const offset = arena.textOffsetAt(position);
    const buffer = arena.bufferAt(position);
    assert.equal(
      buffer.toString('utf8', offset - 1, offset + arena.textLengthAt(position) + 12),
      line.toString(),
      'the whole line is there',
    );
  }
  assert.equal(arena.jsonArray([0, 1, 2]).toString(), `[${[1, 2, 3].map((id) => text(id, `p${id}`)).join(',')}]`);
});
