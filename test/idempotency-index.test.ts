import assert from 'node:assert/strict';
import { test } from 'node:test';
import { KeyedHash } from '#dist/lib/keyed-hash.js';
import { IdempotencyIndex, type IdempotencyRecord } from '#dist/store/file/idempotency.js';

/** The index with the pets' lines stood in for by a map: the index reads a key back only from there. */
function indexOf(
  windowMs: number,
  maxPerScope?: number,
  hash?: KeyedHash,
): { index: IdempotencyIndex; store: (record: IdempotencyRecord, id: number) => void; reads: () => number } {
  const lines = new Map<number, IdempotencyRecord>();
  let reads = 0;
  const index = new IdempotencyIndex(
    windowMs,
    (id) => {
      reads++;
      return lines.get(id);
    },
    maxPerScope,
    hash,
  );
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

test("a key's older record expiring does not forget the newer pet the key names now", () => {
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

test("a key's newer pet is the one found after the table is rebuilt as it grows, not its older one", () => {
  const { index, store } = indexOf(1000);
  store(record('k', 0), 1);
  store(record('k', 900), 2);
  // Past 64, 128, 256 and 512 entries the arrays grow and the table is built again.
  for (let id = 3; id <= 600; id++) store(record(`other-${id}`, 900), id);
  assert.equal(index.lookup('s', 'k', 950), 2);
  assert.equal(index.lookup('s', 'other-600', 950), 600);
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
        assert.equal(
          index.lookup('s', `order-${probe}`, id),
          id - probe < 10_000 ? probe : undefined,
          `key ${probe} at ${id}`,
        );
        assert.equal(index.isLive(probe, id), id - probe < 10_000, `pet ${probe} at ${id}`);
      }
      assert.ok(index.size <= 10_000 + 997, `old entries are dropped: ${index.size}`);
    }
  }
  assert.equal(index.lookup('t', 'order-50000', 50_000), undefined, 'another scope is another key');
});

/** FNV-1a 32 of `text`, continued from `hash`: the index's hash before it was keyed. */
function fnv(text: string, hash = 0x811c9dc5): number {
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}

/**
 * 2^stages keys whose FNV-1a of `${scope}\n${key}` is one value (Joux's multicollision): at each
 * stage two blocks of 4 characters that take the hash so far to one value (a birthday search), so
 * that every choice of one block per stage ends on the same hash.
 */
function fnvMulticollision(scope: string, stages: number): string[] {
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
  let keys = [''];
  let state = fnv(`${scope}\n`);
  let random = 1; // xorshift32: blocks taken in counting order collide an order of magnitude later
  for (let stage = 0; stage < stages; stage++) {
    const seen = new Map<number, string>();
    for (;;) {
      random ^= random << 13;
      random ^= random >>> 17;
      random ^= random << 5;
      const block = [0, 6, 12, 18].map((shift) => ALPHABET[(random >>> shift) & 63]).join('');
      const hash = fnv(block, state);
      const other = seen.get(hash);
      if (other !== undefined && other !== block) {
        keys = keys.flatMap((key) => [key + other, key + block]);
        state = hash;
        break;
      }
      seen.set(hash, block);
    }
  }
  return keys;
}

test('keys whose hashes collide are told apart by reading their records back', () => {
  // A known secret, and two keys of one scope with the same hash under it.
  const hash = new KeyedHash(new Uint32Array([1, 2]));
  const seen = new Map<number, string>();
  let pair: [string, string] | undefined;
  for (let i = 0; pair === undefined; i++) {
    const key = `k${i}`;
    const value = hash.hash(`s\n${key}`);
    const other = seen.get(value);
    if (other !== undefined) pair = [other, key];
    seen.set(value, key);
  }
  const { index, store, reads } = indexOf(1000, undefined, hash);
  store(record(pair[0], 0), 1);
  store(record(pair[1], 0), 2);
  assert.equal(index.lookup('s', pair[0], 1), 1);
  assert.equal(index.lookup('s', pair[1], 1), 2);
  assert.ok(reads() > 0, 'a record was read back to tell them apart');
});

test('keys made to share one unkeyed hash cost what any keys cost: no record is read back but the one asked for', () => {
  const keys = fnvMulticollision('s', 9);
  assert.equal(new Set(keys).size, 512);
  assert.equal(new Set(keys.map((key) => fnv(`s\n${key}`))).size, 1, 'all 512 share one FNV-1a hash');
  const { index, store, reads } = indexOf(60_000);
  // Restored as at a start, through the table's growth from 64 entries to 1,024.
  keys.forEach((key, i) => store(record(key, i), i + 1));
  const restoring = reads();
  keys.forEach((key, i) => assert.equal(index.lookup('s', key, 1000), i + 1));
  const looking = reads() - restoring;
  // Unkeyed, the n-th key read the n - 1 before it back at restore, and each lookup all 511 others.
  assert.ok(restoring <= 8, `records read back while restoring 512 keys: ${restoring}`);
  assert.ok(looking <= 512 + 8, `records read back by 512 lookups: ${looking}`);
});

test('creates with a key still under way count against the bound: past it, a new key is refused until one ends', () => {
  const { index, store } = indexOf(60_000, 3);
  store(record('a0', 0), 1);
  assert.equal(index.begin('s', 'a1', 1000), 'begun');
  assert.equal(index.begin('s', 'a2', 1000), 'begun');
  assert.deepEqual(
    index.begin('s', 'a3', 1000),
    { retryAfter: 1 },
    'one key remembered and two under way hold the three places',
  );
  assert.deepEqual(index.begin('s', 'a4', 1000), { retryAfter: 1 });
  index.end(record('a2', 1000), undefined);
  assert.equal(index.begin('s', 'a3', 1000), 'begun', 'a refused create gives its place back');
  index.end(record('a1', 1000), 2);
  index.end(record('a3', 1000), 3);
  assert.deepEqual(
    index.begin('s', 'a4', 2000),
    { retryAfter: 58 },
    'all three remembered: the oldest, made at 0, leaves at 60 s',
  );
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
  assert.deepEqual(
    index.begin('s', 'a4', 60_001),
    { retryAfter: 1 },
    'full again: the next oldest, made at 1 s, leaves at 61 s',
  );
});
