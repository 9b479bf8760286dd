/**
 * `wait` on `GET /v1/pets`: an empty page waits for a matching pet, or answers `200 []` when its
 * seconds are up; the filter holds while it waits; bad values are a 400; a stop, a client that goes,
 * and an embedder's close all end the wait.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  embedServer,
  request,
  startServer,
  tempDirFor,
  TEST_KEY,
  within,
  type Response,
  type TestServer,
} from './support.js';
import { createPetstore, silentLoggerForTests } from './package.js';
import { listenerExposition, waitForHeld } from './metrics-support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

/** A server on port 0 with its metrics listener, whose gauge of held requests says when a request waits. */
async function heldServer(t: TestContext): Promise<TestServer & { waits: (count: number) => Promise<void> }> {
  const server = await startServer({ metricsPort: 0 });
  t.after(() => server.close());
  const exposition = listenerExposition(server.running.metricsUrl as string);
  return Object.assign(server, {
    waits: (count: number) => waitForHeld(exposition, { wait: count }, `${count} waiting`),
  });
}

function create(server: TestServer, body: string): Promise<Response> {
  return server.request('POST', '/v1/pets', { headers: JSON_HEADERS, body });
}

/** `promise`'s outcome if it settled within `ms`, else 'pending'. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, sleep(ms).then(() => 'pending' as const)]);
}

test('a waiting request sleeps through a pet of another status and is answered by the first matching one, as an ordinary page', async (t) => {
  const server = await heldServer(t);
  assert.equal((await create(server, '{"name":"Old","categoryId":1,"status":"sold"}')).status, 201);
  const started = performance.now();
  const waiting = server.request('GET', '/v1/pets?status=sold&after=1&limit=1&wait=20');
  await server.waits(1);
  assert.equal((await create(server, '{"name":"Pending","categoryId":2,"status":"pending"}')).status, 201);
  assert.equal((await create(server, '{"name":"None","categoryId":3}')).status, 201);
  assert.equal(await settledWithin(waiting, 300), 'pending', 'pets of another status wake no answer');
  const sold = await create(server, '{"name":"Sold","categoryId":4,"status":"sold"}');
  const answer = await within(waiting, 5000, 'the answer after the sold pet');
  assert.ok(performance.now() - started < 10_000, 'answered long before the wait was over');
  assert.equal(answer.status, 200);
  assert.equal(answer.text, `[${sold.text}]`);
  assert.equal(answer.headers.etag, 'W/"1.1.sold.4"');
  assert.equal(answer.headers.link, undefined);
  // Answered as the same request without wait would be now.
  const now = await server.request('GET', '/v1/pets?status=sold&after=1&limit=1');
  assert.equal(now.text, answer.text);
  assert.equal(now.headers.etag, answer.headers.etag);
});

test('a wait that sees no matching pet answers 200 [] once its seconds are up', async (t) => {
  const server = await heldServer(t);
  assert.equal((await create(server, '{"name":"Rex","categoryId":1,"status":"available"}')).status, 201);
  const started = performance.now();
  const waiting = server.request('GET', '/v1/pets?status=available&after=1&wait=1');
  await server.waits(1);
  assert.equal((await create(server, '{"name":"Tom","categoryId":2,"status":"sold"}')).status, 201);
  const answer = await waiting;
  const ms = performance.now() - started;
  assert.equal(answer.status, 200);
  assert.equal(answer.text, '[]');
  assert.equal(answer.headers.etag, 'W/"20.1.available.0"');
  assert.ok(ms >= 990, `answered after its second (${Math.round(ms)} ms)`);
  assert.ok(ms < 5000, `and not much later (${Math.round(ms)} ms)`);
});

test('wait=0, or a page that has pets, answers at once', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  assert.equal((await create(server, '{"name":"Rex","categoryId":1}')).status, 201);
  for (const path of ['/v1/pets?wait=60', '/v1/pets?after=1&wait=0']) {
    const started = performance.now();
    const res = await server.request('GET', path);
    assert.equal(res.status, 200);
    assert.ok(performance.now() - started < 1000, path);
  }
});

test('wait that is not whole seconds from 0 to 60 is a 400 with the Error body', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  for (const value of ['-1', '61', '1.5', '', 'abc', '1e1', '+1', '%201', '0x1', '99999999999', '1&wait=2']) {
    const res = await server.request('GET', `/v1/pets?wait=${value}`);
    assert.equal(res.status, 400, `wait=${value}: ${res.text}`);
    const body = res.json as { code: string; message: string; status: number };
    assert.equal(body.code, 'invalid_request');
    assert.equal(body.status, 400);
    assert.match(body.message, /query parameter "wait"/, value);
  }
  // A page with a pet answers at once, so the accepted value costs no wait.
  assert.equal((await create(server, '{"name":"Rex","categoryId":1}')).status, 201);
  assert.equal((await server.request('GET', '/v1/pets?wait=060')).status, 200, 'leading zeros are digits too');
});

test('a stop answers every waiting request at once with an empty page and Connection: close', async (t) => {
  const server = await heldServer(t);
  const waiting = [server.request('GET', '/v1/pets?wait=30'), server.request('GET', '/v1/pets?status=sold&wait=30')];
  await server.waits(2);
  const started = performance.now();
  // The graceful stop itself (the helper's stop() cuts every connection first).
  await server.running.close();
  const answers = await within(Promise.all(waiting), 2000, 'the answers');
  assert.ok(performance.now() - started < 2000);
  for (const a of answers) {
    assert.equal(a.status, 200);
    assert.equal(a.text, '[]');
    assert.equal(a.headers.connection, 'close');
  }
});

test("a client that leaves while it waits frees its place; an embedder's close() answers those that wait", async (t) => {
  const dir = await tempDirFor(t);
  const petstore = await createPetstore({
    dataDir: dir,
    keys: [TEST_KEY],
    logger: silentLoggerForTests,
    maxStreams: 1,
    metrics: true,
  });
  const url = await embedServer(t, petstore);
  const exposition = () => petstore.metrics();
  const gone = httpRequest(`${url}/v1/pets?wait=30`, {
    headers: { authorization: `Bearer ${TEST_KEY}` },
    agent: false,
  });
  gone.on('error', () => {});
  gone.end();
  await waitForHeld(exposition, { wait: 1 }, 'the first client waits');
  assert.equal((await request(url, 'GET', '/v1/pets?wait=30')).status, 503, 'the one place is taken');
  gone.destroy();
  await waitForHeld(exposition, { wait: 0 }, 'the place of the client that left is free again');
  const waiting = request(url, 'GET', '/v1/pets?wait=30');
  await waitForHeld(exposition, { wait: 1 }, 'the next client waits in the freed place');
  petstore.closeStreams();
  const answer = await within(waiting, 2000, 'answered by closeStreams()');
  assert.equal(answer.text, '[]');
  assert.equal((await request(url, 'GET', '/v1/pets?wait=30')).status, 503, 'no new wait once closed');
});

test("with a store of the embedder's own that tells no commits, a waiting request learns of the pets created through the service", async (t) => {
  const pets: Array<{ id: number; name: string; categoryId: bigint }> = [];
  const store = {
    ready: true,
    list: ({ after, limit }: { after: number; limit: number }) => {
      const matching = pets.filter((p) => p.id > after);
      return { pets: matching.slice(0, limit), more: matching.length > limit };
    },
    get: (id: number) => pets.find((p) => p.id === id),
    create: async (pet: { name: string; categoryId: bigint }) => {
      const stored = { id: pets.length + 1, name: pet.name, categoryId: pet.categoryId };
      pets.push(stored);
      return stored;
    },
    close: async () => {},
  };
  const petstore = await createPetstore({ store, keys: [TEST_KEY], logger: silentLoggerForTests, metrics: true });
  const url = await embedServer(t, petstore);
  const waiting = request(url, 'GET', '/v1/pets?wait=20');
  await waitForHeld(() => petstore.metrics(), { wait: 1 }, 'the request waits');
  const created = await request(url, 'POST', '/v1/pets', {
    headers: JSON_HEADERS,
    body: '{"name":"Own","categoryId":1}',
  });
  assert.equal(created.status, 201);
  const answer = await within(waiting, 5000, 'the answer');
  assert.equal(answer.text, `[${created.text}]`);
});
