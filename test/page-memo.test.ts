/**
 * The index keeps pages it has built (store/page-memo.ts). A kept page must never be served once it
 * is wrong: a page with no more pets after it changes when a pet is added, and every answer must be
 * the page the pets added make (a list filtered and cut: a fresh index built at each step made the
 * test quadratic, 2.5 s of CPU). The memo stays within its bounds however many pages are asked for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MEMO_BYTES, MEMO_PAGES, PageMemo } from '#dist/store/page-memo.js';
import { PetIndex } from '#dist/store/pet-index.js';
import { petJson } from '#dist/pet/codec.js';
import type { Pet } from '#dist/pet/pet.js';
import { buildLine } from '#dist/store/file/records/record-line.js';
import type { PetStatus } from '#dist/pet/contract.js';
import type { ListQuery } from '#dist/store/store.js';

const STATUSES: ReadonlyArray<PetStatus | undefined> = ['available', 'pending', 'sold', undefined];

function petOf(id: number, status: PetStatus | undefined): Pet {
  return status === undefined
    ? { id, name: `pet ${id}`, categoryId: 7n }
    : { id, name: `pet ${id}`, categoryId: 7n, status };
}

function add(index: PetIndex, id: number, status: PetStatus | undefined): void {
  const text = petJson(petOf(id, status));
  const line = buildLine(text, undefined);
  index.appendLine(id, status, line, 0, line.length, 1, 1 + Buffer.byteLength(text));
}

const text = (index: PetIndex, query: ListQuery): string => {
  const page = index.listText(query);
  return `${page.json.toString()} ${page.lastId} ${page.more}`;
};

/** The page a list of the pets `added` gives, in the form of `text`: what any index must answer. */
function expected(added: ReadonlyArray<[number, PetStatus | undefined]>, query: ListQuery): string {
  const after = added.filter(([id, status]) => id > query.after && (query.status ?? status) === status);
  const page = after.slice(0, query.limit);
  const json = `[${page.map(([id, status]) => petJson(petOf(id, status))).join(',')}]`;
  return `${json} ${page.at(-1)?.[0]} ${after.length > query.limit}`;
}

test('a page with no pet after it is built again once a pet is added; one with more after it is kept', () => {
  const index = new PetIndex();
  for (let id = 1; id <= 3; id++) add(index, id, 'sold');
  const first = { after: 0, limit: 10 };
  const sold = { after: 0, limit: 10, status: 'sold' as const };
  assert.equal(JSON.parse(index.listText(first).json.toString()).length, 3);
  assert.equal(JSON.parse(index.listText(sold).json.toString()).length, 3);
  add(index, 4, 'available');
  assert.equal(JSON.parse(index.listText(first).json.toString()).length, 4, 'the new pet is on the page');
  assert.equal(JSON.parse(index.listText(sold).json.toString()).length, 3);
  add(index, 5, 'sold');
  assert.deepEqual(
    JSON.parse(index.listText(sold).json.toString()).map((p: Pet) => p.id),
    [1, 2, 3, 5],
  );
  const two = { after: 0, limit: 2 };
  const kept = index.listText(two);
  assert.equal(kept.more, true);
  add(index, 6, undefined);
  assert.equal(index.listText(two), kept, 'a page with more after it never changes, and is kept');
});

test('whatever is added and asked in whatever order, every page is the one the pets added make', () => {
  let seed = 12345;
  const random = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const index = new PetIndex();
  const added: Array<[number, PetStatus | undefined]> = [];
  for (let step = 0; step < 3000; step++) {
    if (random(3) === 0) {
      const id = (added.at(-1)?.[0] ?? 0) + 1 + random(3); // ids ascend, with gaps
      const status = STATUSES[random(4)];
      add(index, id, status);
      added.push([id, status]);
      continue;
    }
    const status = STATUSES[random(4)];
    const query: ListQuery = {
      after: random((added.at(-1)?.[0] ?? 0) + 3),
      limit: 1 + random(6),
      ...(status === undefined ? {} : { status }),
    };
    assert.equal(text(index, query), expected(added, query), `step ${step}: ${JSON.stringify(query)}`);
  }
});

test('the memo keeps at most its number of pages and bytes, the oldest going first', () => {
  const memo = new PageMemo();
  const page = (bytes: number) => ({ json: Buffer.alloc(bytes, 0x20), lastId: 1, more: true });
  for (let after = 0; after < MEMO_PAGES * 3; after++) memo.set({ after, limit: 20 }, 0, page(100));
  assert.equal(memo.size, MEMO_PAGES);
  assert.equal(memo.bytes, MEMO_PAGES * 100);
  assert.equal(memo.get({ after: 0, limit: 20 }, 0), undefined, 'the oldest went first');
  assert.ok(memo.get({ after: MEMO_PAGES * 3 - 1, limit: 20 }, 0) !== undefined);
  const big = Math.floor(MEMO_BYTES / 3);
  for (let after = 0; after < 10; after++) memo.set({ after, limit: 100 }, 0, page(big));
  assert.ok(memo.bytes <= MEMO_BYTES, `${memo.bytes} bytes kept`);
  assert.ok(memo.get({ after: 9, limit: 100 }, 0) !== undefined);
  memo.set({ after: 9, limit: 100 }, 0, page(10));
  assert.ok(
    memo.bytes <= MEMO_BYTES && memo.get({ after: 9, limit: 100 }, 0)?.json.length === 10,
    'a page kept again replaces the old, and its bytes',
  );
  memo.set({ after: 1, limit: 1 }, 0, page(MEMO_BYTES + 1));
  assert.equal(memo.get({ after: 1, limit: 1 }, 0), undefined, 'a page larger than all the room is not kept');
  assert.equal(memo.get({ after: 9, limit: 100 }, 0)?.json.length, 10, 'and nothing kept went to make room for it');
});
