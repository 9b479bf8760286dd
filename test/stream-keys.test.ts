/**
 * Streams and waits belong to the API key they came with (issue 29, items 3 and 4): a revoked key's
 * end as soon as the revocation reaches new requests; one key holds at most --max-streams-per-key of
 * them, and past it only that key is refused (429 too_many_streams); a stream ends at its lifetime and
 * resumes with Last-Event-ID, missing nothing.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  embedServer,
  request,
  startServer,
  TEST_KEY,
  tempDir,
  tempDirFor,
  waitFor,
  within,
  type Response,
} from './support.js';
import { GatedStore } from './gated-store.js';
import { createKey, keysCommand } from './keys-support.js';
import { byLabel, listenerExposition, metricsServer, requestCounts, scrape, waitForHeld } from './metrics-support.js';
import { openStream } from './stream-support.js';
import { createPetstore, silentLoggerForTests, type LogFields } from './package.js';

const OTHER_KEY = 'other-key-0123456789abcdef';
const JSON_TYPE: [string, string] = ['content-type', 'application/json'];

/** A server on a data directory with one key in keys.json (and the test key given directly), logging its info lines into `infos`. */
async function serveWithKeyFile(t: TestContext): Promise<{
  url: string;
  key: string;
  id: string;
  dir: string;
  infos: Array<[string, LogFields | undefined]>;
  held: (expected: { wait: number; stream: number }) => Promise<void>;
}> {
  const dir = await tempDir(); // removed by server.close()
  const { key, id } = await createKey(dir, 'watcher');
  const infos: Array<[string, LogFields | undefined]> = [];
  const logger = {
    request() {},
    error() {},
    info: (msg: string, fields?: LogFields) => void infos.push([msg, fields]),
  };
  const server = await startServer({ dataDir: dir, logger, metricsPort: 0 });
  t.after(() => server.close());
  const exposition = listenerExposition(server.running.metricsUrl as string);
  const held = (expected: { wait: number; stream: number }) => waitForHeld(exposition, expected, 'held requests');
  return { url: server.url, key, id, dir, infos, held };
}

function createPet(url: string, name: string): Promise<Response> {
  return request(url, 'POST', '/v1/pets', { headers: [JSON_TYPE], body: JSON.stringify({ name, categoryId: 1 }) });
}

test("keys revoke ends the key's open stream and answers its waiting request 401 within a second or two, with no other request, in one log line", {
  timeout: 120_000,
}, async (t) => {
  const { url, key, id, dir, infos, held } = await serveWithKeyFile(t);
  const stream = await openStream(url, '/v1/pets', [], key);
  assert.equal(stream.status, 200);
  const waiting = request(url, 'GET', '/v1/pets?wait=30', { auth: key });
  await held({ stream: 1, wait: 1 });
  await keysCommand(dir, ['revoke', id]);
  assert.equal(await within(stream.ended, 3000, "the stream's end"), 'end', 'ended cleanly, not cut');
  const answer = await within(waiting, 3000, "the waiting request's answer");
  assert.equal(answer.status, 401);
  assert.equal(answer.headers['www-authenticate'], 'Bearer realm="petstore"');
  assert.deepEqual(answer.json, {
    code: 'unauthorized',
    message: 'this API key was revoked while the request waited',
    status: 401,
  });
  const ended = infos.filter(([msg]) => msg === 'event streams and waiting requests of a revoked API key ended');
  assert.deepEqual(ended, [['event streams and waiting requests of a revoked API key ended', { keyId: id, ended: 2 }]]);
  // Reconnecting, the client learns why.
  assert.equal((await openStream(url, '/v1/pets', [], key)).status, 401);
});

test("once a revocation refuses new requests, a pet created reaches neither the revoked key's stream nor its wait", {
  timeout: 120_000,
}, async (t) => {
  const { url, key, id, dir, held } = await serveWithKeyFile(t);
  const stream = await openStream(url, '/v1/pets', [], key);
  const waiting = request(url, 'GET', '/v1/pets?wait=30', { auth: key });
  await held({ stream: 1, wait: 1 });
  await keysCommand(dir, ['revoke', id]);
  // Once a new request with the key is refused, nothing more reaches what the key opened before.
  const refused = async () => (await request(url, 'GET', '/v1/pets', { auth: key })).status === 401;
  await waitFor(refused, 3000, 'the revocation reaches new requests');
  assert.equal((await createPet(url, 'After')).status, 201);
  assert.equal((await within(waiting, 3000, 'the answer')).status, 401);
  await within(stream.ended, 3000, "the stream's end");
  assert.deepEqual(stream.events(), [], `no pet reached the revoked key's stream: ${stream.text()}`);
});

test("after a stream has come and gone, a key revoked later is still refused on new requests within the reload delay (the feed's checks and the requests' share one clock)", {
  timeout: 120_000,
}, async (t) => {
  const { url, key, id, dir, held } = await serveWithKeyFile(t);
  const stream = await openStream(url, '/v1/pets', [], key);
  assert.equal(stream.status, 200);
  await sleep(600); // the feed asks the keyring to check the key file while the stream is held
  stream.close();
  await held({ stream: 0, wait: 0 });
  assert.equal((await request(url, 'GET', '/v1/pets', { auth: key })).status, 200);
  await keysCommand(dir, ['revoke', id]);
  const refused = async () => (await request(url, 'GET', '/v1/pets', { auth: key })).status === 401;
  await waitFor(refused, 3000, 'the revocation reaches new requests within 3 s');
});

test('a wait or a stream whose first page was still being read when its key was revoked gets the 401, not a place', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  const { key, id } = await createKey(dir, 'watcher');
  const store = new GatedStore();
  const petstore = await createPetstore({ store, dataDir: dir, keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, petstore);
  const waiting = request(url, 'GET', '/v1/pets?wait=2', { auth: key });
  await waitFor(() => store.held.length === 1, 5000, "the wait's first read");
  const opening = openStream(url, '/v1/pets', [], key);
  await waitFor(() => store.held.length === 2, 5000, "the stream's first read");
  await keysCommand(dir, ['revoke', id]);
  const refused = async () => (await request(url, 'GET', '/v1/pets/1', { auth: key })).status === 401;
  await waitFor(refused, 3000, 'the revocation reaches new requests');
  store.open(); // both first pages, read before the revocation, come back empty
  const answer = await within(waiting, 5000, "the wait's answer");
  assert.equal(answer.status, 401, `the wait was not held after its key went: ${answer.text}`);
  const stream = await within(opening, 5000, "the stream's answer");
  assert.equal(stream.status, 401);
});

test('one key holds at most --max-streams-per-key streams and waits: past it that key gets 429 too_many_streams, another key is held, and a freed place is taken again', {
  timeout: 120_000,
}, async (t) => {
  const server = await metricsServer(t, { keys: [TEST_KEY, OTHER_KEY], maxStreamsPerKey: 2, maxStreams: 4 });
  const mine = [await openStream(server.url), await openStream(server.url)];
  t.after(() => mine.forEach((s) => s.close()));
  assert.deepEqual(
    mine.map((s) => s.status),
    [200, 200],
  );
  for (const refused of [
    await server.request('GET', '/v1/pets?wait=5'),
    await server.request('GET', '/v1/pets', { headers: [['accept', 'text/event-stream']] }),
  ]) {
    assert.equal(refused.status, 429);
    assert.equal(refused.headers['retry-after'], '5');
    assert.deepEqual(refused.json, {
      code: 'too_many_streams',
      status: 429,
      message:
        'this API key holds 2 event streams and waiting requests, the most one key may; end one, or retry after Retry-After seconds',
    });
  }
  const theirs = await openStream(server.url, '/v1/pets', [], OTHER_KEY);
  t.after(() => theirs.close());
  assert.equal(theirs.status, 200, 'another key is not refused');
  const theirWait = server.request('GET', '/v1/pets?wait=10', { auth: OTHER_KEY });
  const { families } = await scrape(server.metricsUrl);
  assert.deepEqual(byLabel(families, 'petstore_http_refused_total', 'reason'), {
    body_limit: 0,
    auth_failure_limit: 0,
    idempotency_key_limit: 0,
    rate_limit: 0,
    max_streams: 0,
    max_streams_per_key: 2,
    store_unavailable: 0,
  });
  assert.equal(requestCounts(families)['GET /v1/pets 429'], 2);
  // A stream of mine that ends frees its place for my next one.
  mine[0]?.close();
  await waitForHeld(listenerExposition(server.metricsUrl), { stream: 2, wait: 1 }, 'my first stream gone');
  const again = await openStream(server.url);
  t.after(() => again.close());
  assert.equal(again.status, 200);
  assert.equal((await createPet(server.url, 'One')).status, 201);
  assert.equal(
    (await within(theirWait, 5000, "the other key's wait")).status,
    200,
    "the other key's wait was held, and answered by the pet",
  );
  // The OpenAPI document says so: the code, and listPets' 429 with its Retry-After.
  const document = (await server.request('GET', '/v1/openapi.json')).json as OpenApi;
  assert.ok(document.components.schemas.Error.properties.code.enum.includes('too_many_streams'));
  const tooMany = document.paths['/pets']?.get.responses['429'];
  assert.ok(tooMany !== undefined, 'listPets declares a 429');
  assert.match(tooMany.description, /too_many_streams, --max-streams-per-key/);
  assert.ok('Retry-After' in tooMany.headers);
});

interface OpenApi {
  components: { schemas: { Error: { properties: { code: { enum: string[] } } } } };
  paths: Record<
    string,
    { get: { responses: Record<string, { description: string; headers: Record<string, unknown> }> } }
  >;
}

test('a stream ends cleanly once its --stream-lifetime is over, and resumed with Last-Event-ID misses nothing', {
  timeout: 120_000,
}, async (t) => {
  const server = await startServer({ streamLifetime: 1 });
  t.after(() => server.close());
  const opened = performance.now();
  const stream = await openStream(server.url);
  t.after(() => stream.close());
  const first = await createPet(server.url, 'First');
  await stream.until((text) => text.includes(first.text), 3000, 'the first pet');
  assert.equal(await within(stream.ended, 5000, 'the end of its lifetime'), 'end', 'ended cleanly, not cut');
  const lasted = performance.now() - opened;
  assert.ok(lasted >= 990, `it lasted its second (${Math.round(lasted)} ms)`);
  assert.ok(stream.text().startsWith('retry: 1000\n\n'), 'it told the client how soon to come back');
  const missed = await createPet(server.url, 'While away');
  const resumed = await openStream(server.url, '/v1/pets', [['last-event-id', String(stream.events().at(-1)?.id)]]);
  t.after(() => resumed.close());
  await resumed.until((text) => text.includes(missed.text), 3000, 'the pet created while away');
  assert.deepEqual(
    resumed.events().map((e) => e.data),
    [missed.text],
  );
});

test('a start with --max-streams-per-key not below --max-streams says once that one key can hold every stream', async (t) => {
  const said = async (maxStreams: number, maxStreamsPerKey: number): Promise<string[]> => {
    const lines: string[] = [];
    const logger = { request() {}, info() {}, error: (message: string) => void lines.push(message) };
    const server = await startServer({ logger, maxStreams, maxStreamsPerKey });
    t.after(() => server.close());
    return lines.filter((line) => line.includes('--max-streams-per-key'));
  };
  assert.equal((await said(10, 10)).length, 1, 'equal');
  assert.equal((await said(10, 20)).length, 1, 'above');
  assert.deepEqual(await said(10, 9), [], 'below: nothing to say');
});
