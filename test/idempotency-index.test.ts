import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdempotencyIndex, type IdempotencyRecord } from '#dist/store/file/idempotency.js';

/** The index with the pets' lines stood in for by a map: the index reads a key back only from there. */
function indexOf(windowMs: number, maxPerScope?: number): { index: IdempotencyIndex; store: (record: IdempotencyRecord, id: number) => void; reads: () => number } {
  const lines = new Map<number, IdempotencyRecord>();
  let reads = 0;
  const index = new IdempotencyIndex(windowMs, (id) => {
    reads++;
    return lines.get(id);
  }, maxPerScope);
  return {
    index,
    store: (record, id) => {
      lines.set(id, record);
      index.restore(record, id, record.at);
    },
    reads: () => reads,
  };
}

const record = (key: string, at: number, scope = 's'): IdempotencyRecord => ({ scope, key, at });

test('a key\'s older record expiring does not forget the newer pet the key names now', () => {
  // Two records for one key can both be on disk: the first's window ended, the same request made a
  // second pet, and a restart with a longer window restores both.
  const { index, store } = indexOf(1000);
  store(record('k', 0), 1);
  store(record('k', 900), 2);
  assert.equal(index.lookup('s', 'k', 950), 2);
  assert.equal(index.isLive(1, 1500), false, 'the first record has expired');
  index.sweep(1500);
  assert.equal(index.lookup('s', 'k', 1500), 2, 'the key still names the second pet');
  assert.equal(index.isLive(2, 1500), true);
  assert.equal(index.lookup('s', 'k', 1900), undefined, 'until its own window ends');
});

test('a key is free again once its create was refused, and taken while its create is being committed', () => {
  const { index } = indexOf(1000);
  assert.equal(index.begin('s', 'k', 0), 'begun');
  assert.equal(index.begin('s', 'k', 0), 'taken', 'in progress');
  index.end(record('k', 0), undefined);
  assert.equal(index.begin('s', 'k', 0), 'begun', 'a refused create frees the key');
  assert.equal(index.lookup('s', 'k', 10), undefined, 'nothing is remembered of a refused create');
});

test('thousands of keys through growth and a moving window: each found while in it, none after', () => {
  const { index, store } = indexOf(10_000);
  // One key a millisecond for 50 s: at any moment the last 10,000 are within the window.
  for (let id = 1; id <= 50_000; id++) {
    store(record(`order-${id}`, id), id);
    if (id % 997 === 0) {
      index.sweep(id);
      for (const probe of [id - 10_000, id - 9_999, id - 5000, id]) {
        if (probe < 1) continue;
        assert.equal(index.lookup('s', `order-${probe}`, id), id - probe < 10_000 ? probe : undefined, `key ${probe} at ${id}`);
        assert.equal(index.isLive(probe, id), id - probe < 10_000, `pet ${probe} at ${id}`);
      }
      assert.ok(index.size <= 10_000 + 997, `old entries are dropped: ${index.size}`);
    }
  }
  assert.equal(index.lookup('t', 'order-50000', 50_000), undefined, 'another scope is another key');
});

test('keys whose hashes collide are told apart by reading their records back', () => {
  // FNV-1a as the index documents it: find two keys of one scope with the same hash.
  const fnv = (text: string): number => {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    return hash;
  };
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; pair === undefined; i++) {
    const key = `k${i}`;
    const hash = fnv(`s\n${key}`);
    const other = seen.get(hash);
    if (other !== undefined) pair = [other, key];
    seen.set(hash, key);
  }
  const { index, store, reads } = indexOf(1000);
  store(record(pair[0], 0), 1);
  store(record(pair[1], 0), 2);
  assert.equal(index.lookup('s', pair[0], 1), 1);
  assert.equal(index.lookup('s', pair[1], 1), 2);
  assert.ok(reads() > 0, 'a record was read back to tell them apart');
});

test('each API key may have at most so many keys remembered: past that, the wait until its oldest leaves the window', () => {
  const { index, store } = indexOf(60_000, 3);
  for (let i = 0; i < 3; i++) store(record(`a${i}`, i * 1000), i + 1);
  store(record('b0', 0, 'other'), 4);
  assert.deepEqual(index.begin('s', 'a3', 10_000), { retryAfter: 50 }, 'the oldest, made at 0, leaves at 60 s');
  assert.equal(index.begin('other', 'b1', 10_000), 'begun', 'another API key is not held up');
  assert.equal(index.lookup('s', 'a0', 10_000), 1, 'a replay needs no new key');
  assert.deepEqual(index.begin('s', 'a3', 59_500), { retryAfter: 1 });
  assert.equal(index.begin('s', 'a3', 60_000), 'begun', 'the oldest left the window');
  index.end(record('a3', 60_000), 5);
  assert.deepEqual(index.begin('s', 'a4', 60_001), { retryAfter: 1 }, 'full again: the next oldest, made at 1 s, leaves at 61 s');
});
