/**
 * The commit watch without a database to listen on: its reads of the highest id are given up after
 * their deadline, so that one left hanging (on a connection a restart cut) never silences it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CommitWatch } from '#dist/store/postgres/commit-watch.js';

test('a read of the highest id that never answers is given up: the watch goes on hearing', async (t) => {
  let reads = 0;
  const watch = new CommitWatch({
    // Nothing listens there: LISTEN fails, and the watch reads the highest id every 250 ms instead.
    url: 'postgres://petstore@127.0.0.1:1/none',
    statementTimeout: 50,
    // The first two reads hang: one from the polls while down, one from the once-a-second backstop.
    highestId: () => (++reads <= 2 ? new Promise<never>(() => {}) : Promise.resolve(7)),
    onError: (error) => assert.fail(String(error)),
  });
  t.after(() => watch.close());
  let timer: NodeJS.Timeout | undefined;
  const heard = new Promise<number>((resolve) => {
    watch.add(resolve);
    timer = setTimeout(() => resolve(0), 5000);
  });
  t.after(() => clearTimeout(timer));
  assert.equal(await heard, 7, `the highest id heard within 5 s (${reads} reads)`);
});
