/**
 * The feed's reads from an asynchronous store, whose every page read the test holds and lets go: a
 * read begun before a commit is never shown to a watcher woken by that commit, and a waiting request
 * that a pet passed by while its page was being read reads again (issue 29, item 9). Each of these
 * went through the whole suite unnoticed when planted; the wait's own timeout would have hidden them,
 * so each test asserts the page answered, not how long it took.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { embedServer, request, TEST_KEY, waitFor, within, type Response } from './support.js';
import { GatedStore } from './gated-store.js';
import { waitForHeld } from './metrics-support.js';
import { createPetstore, silentLoggerForTests } from './package.js';

async function serve(
  t: TestContext,
): Promise<{ url: string; store: GatedStore; waits: (count: number) => Promise<void> }> {
  const store = new GatedStore();
  const petstore = await createPetstore({ store, keys: [TEST_KEY], logger: silentLoggerForTests, metrics: true });
  const waits = (count: number) => waitForHeld(() => petstore.metrics(), { wait: count }, `${count} waiting`);
  return { url: await embedServer(t, petstore), store, waits };
}

function create(url: string, name: string, status: string): Promise<Response> {
  return request(url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ name, categoryId: 1, status }),
  });
}

async function heldReads(store: GatedStore, count: number): Promise<void> {
  await waitFor(() => store.held.length === count, 5000, `${count} page reads held`);
}

test('a read begun before a commit is not shared with a waiting request that commit woke: it reads again and gets the new pet', {
  timeout: 120_000,
}, async (t) => {
  const { url, store, waits } = await serve(t);
  const first = request(url, 'GET', '/v1/pets?status=sold&wait=3');
  await heldReads(store, 1);
  store.held.shift()?.release();
  await waits(1);
  assert.equal((await create(url, 'Pending', 'pending')).status, 201);
  // The first, woken by the pending pet, reads the sold pets again: a read that stays held.
  await heldReads(store, 1);
  const second = request(url, 'GET', '/v1/pets?status=sold&wait=3');
  await heldReads(store, 2);
  store.held.pop()?.release(); // the second's first page: empty, read after the pending pet
  await waits(2);
  const sold = await create(url, 'Sold', 'sold');
  assert.equal(sold.status, 201);
  await heldReads(store, 2); // the sold pet woke the second, while the first's read of before it is still held
  store.open();
  const [one, two] = await within(Promise.all([first, second]), 5000, 'both answers');
  assert.equal(two.text, `[${sold.text}]`, 'the second was not answered by the read begun before the sold pet');
  assert.equal(one.text, `[${sold.text}]`);
});

test("a pet committed while a waiting request's page was being read wakes it again once the read is over", {
  timeout: 120_000,
}, async (t) => {
  const { url, store, waits } = await serve(t);
  const waiting = request(url, 'GET', '/v1/pets?status=sold&wait=3');
  await heldReads(store, 1);
  store.held.shift()?.release();
  await waits(1);
  assert.equal((await create(url, 'Pending', 'pending')).status, 201);
  await heldReads(store, 1); // woken by the pending pet, reading
  const sold = await create(url, 'Sold', 'sold');
  await sleep(50); // the sold pet came while the read of before it is held
  store.open();
  const answer = await within(waiting, 5000, 'the answer');
  assert.equal(answer.text, `[${sold.text}]`);
});

test("a pet committed while a waiting request's first page was being read is found once it begins to wait", {
  timeout: 120_000,
}, async (t) => {
  const { url, store } = await serve(t);
  const waiting = request(url, 'GET', '/v1/pets?status=sold&wait=3');
  await heldReads(store, 1);
  const sold = await create(url, 'Sold', 'sold');
  store.open(); // its first page, read before the sold pet: empty
  const answer = await within(waiting, 5000, 'the answer');
  assert.equal(answer.text, `[${sold.text}]`);
});
