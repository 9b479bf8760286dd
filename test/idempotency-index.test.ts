import assert from 'node:assert/strict';
import { test } from 'node:test';
import { IdempotencyIndex } from '#dist/store/file/idempotency.js';

test('a key\'s older record expiring does not forget the newer pet the key names now', () => {
  // Two records for one key can both be on disk: the first's window ended, the same request made a
  // second pet, and a restart with a longer window restores both.
  const window = 1000;
  const index = new IdempotencyIndex(window);
  const record = (at: number): { scope: string; key: string; at: number } => ({ scope: 's', key: 'k', at });
  index.restore(record(0), 1, 0);
  index.restore(record(900), 2, 900);
  assert.equal(index.lookup('s', 'k', 950), 2);
  assert.equal(index.recordOf(1, 1500), undefined, 'the first record has expired');
  index.sweep(1500);
  assert.equal(index.lookup('s', 'k', 1500), 2, 'the key still names the second pet');
  assert.equal(index.lookup('s', 'k', 1900), undefined, 'until its own window ends');
});

test('a key is free again once its create was refused, and taken while its create is being committed', () => {
  const index = new IdempotencyIndex(1000);
  assert.equal(index.begin('s', 'k'), true);
  assert.equal(index.begin('s', 'k'), false, 'in progress');
  index.end({ scope: 's', key: 'k', at: 0 }, undefined);
  assert.equal(index.begin('s', 'k'), true, 'a refused create frees the key');
  index.end({ scope: 's', key: 'k', at: 0 }, 7);
  assert.equal(index.lookup('s', 'k', 10), 7);
  assert.equal(index.lookup('t', 'k', 10), undefined, 'another scope is another key');
});
