/**
 * The metrics over HTTP, black-box: exact counts after a known mix of requests on every route, label
 * values that stay bounded whatever clients send, the limits and authentication failures by reason,
 * and the metrics listener that serves GET /metrics and nothing else (the API port never does).
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { metricValue } from './exposition-parser.js';
import { rawRequest, request, TEST_KEY, waitFor, type RequestOptions, type Response } from './support.js';
import { byLabel, EXPOSITION_TYPE, metricsServer, requestCounts, scrape } from './metrics-support.js';
import { openStream } from './stream-support.js';

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const ROUTE_TEMPLATES = ['/v1/pets', '/v1/pets/{petId}', '/v1/openapi.json', '/healthz', '/readyz'];
const ROUTER_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'];
// What the service answers with (the OpenAPI document's statuses, and 405 and 404 of the router).
const STATUSES = ['200', '201', '204', '400', '401', '404', '405', '409', '413', '415', '422', '429', '500', '503'];

async function expectStatus(promise: Promise<Response>, status: number): Promise<Response> {
  const res = await promise;
  assert.equal(res.status, status, res.text);
  return res;
}

test('after a known mix of requests each request series counts exactly those requests, and the counters beside them agree', async (t) => {
  const server = await metricsServer(t, { bodyLimit: 200 });
  const go = (method: string, path: string, status: number, options: RequestOptions = {}): Promise<Response> =>
    expectStatus(server.request(method, path, options), status);
  const pet = (body: string, options: RequestOptions = {}): RequestOptions => ({
    ...options,
    body,
    headers: [JSON_TYPE, ...(options.headers ?? [])],
  });

  // POST /v1/pets: 201 × 5 (one of them a replay), 400, 401 × 2, 413, 415
  await go('POST', '/v1/pets', 201, pet('{"name":"a","categoryId":1,"status":"available"}'));
  await go('POST', '/v1/pets', 201, pet('{"name":"b","categoryId":2,"status":"sold"}'));
  await go(
    'POST',
    '/v1/pets',
    201,
    pet('{"name":"c","categoryId":3,"status":"sold"}', { headers: [['idempotency-key', 'k1']] }),
  );
  const replay = await go(
    'POST',
    '/v1/pets',
    201,
    pet('{"name":"c","categoryId":3,"status":"sold"}', { headers: [['idempotency-key', 'k1']] }),
  );
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  await go('POST', '/v1/pets', 201, pet('{"name":"d","categoryId":4}'));
  await go('POST', '/v1/pets', 400, pet('{"name":"","categoryId":1}'));
  await go('POST', '/v1/pets', 401, pet('{"name":"e","categoryId":1}', { auth: 'wrong-key-0123456789' }));
  await go(
    'POST',
    '/v1/pets',
    401,
    pet('{"name":"e","categoryId":1}', { auth: false, headers: [['authorization', 'Basic YTpi']] }),
  );
  await go('POST', '/v1/pets', 413, pet(`{"name":"${'x'.repeat(300)}","categoryId":1}`));
  await go('POST', '/v1/pets', 415, { body: '{"name":"e","categoryId":1}', headers: [['content-type', 'text/plain']] });
  // GET /v1/pets: 200 × 3, HEAD 200, 400 × 2, 401
  await go('GET', '/v1/pets', 200);
  await go('GET', '/v1/pets?limit=1', 200);
  await go('GET', '/v1/pets?status=sold', 200);
  await go('HEAD', '/v1/pets', 200);
  await go('GET', '/v1/pets?limit=0', 400);
  await go('GET', '/v1/pets?status=lost', 400);
  await go('GET', '/v1/pets', 401, { auth: false });
  // GET /v1/pets/{petId}: 200 × 2, 404 × 3, 400 × 2 (one a repeated Authorization), 401; PROPFIND: 405
  await go('GET', '/v1/pets/1', 200);
  await go('GET', '/v1/pets/2', 200);
  for (const id of ['99', '123456', '9007199254740993']) await go('GET', `/v1/pets/${id}`, 404);
  await go('GET', '/v1/pets/abc', 400);
  await go('GET', '/v1/pets/1', 400, { headers: [['authorization', `Bearer ${TEST_KEY}`]] });
  await go('GET', '/v1/pets/1', 401, { auth: false });
  await go('PROPFIND', '/v1/pets/1', 405);
  // the public routes, a wrong method, unknown paths
  await go('GET', '/v1/openapi.json', 200, { auth: false });
  await go('POST', '/v1/openapi.json', 405, { auth: false, body: '' });
  await go('GET', '/healthz', 200, { auth: false });
  await go('GET', '/healthz', 200, { auth: false });
  await go('GET', '/readyz', 200, { auth: false });
  await go('DELETE', '/v1/pets', 405);
  await go('GET', '/v1/orders', 404);
  await go('GET', '/nowhere/at/all', 404);
  await go('GET', '/v1/orders', 401, { auth: false });

  const { families } = await scrape(server.metricsUrl);
  assert.deepEqual(requestCounts(families), {
    'POST /v1/pets 201': 5,
    'POST /v1/pets 400': 1,
    'POST /v1/pets 401': 2,
    'POST /v1/pets 413': 1,
    'POST /v1/pets 415': 1,
    'GET /v1/pets 200': 3,
    'HEAD /v1/pets 200': 1,
    'GET /v1/pets 400': 2,
    'GET /v1/pets 401': 1,
    'GET /v1/pets/{petId} 200': 2,
    'GET /v1/pets/{petId} 404': 3,
    'GET /v1/pets/{petId} 400': 2,
    'GET /v1/pets/{petId} 401': 1,
    '_OTHER /v1/pets/{petId} 405': 1,
    'GET /v1/openapi.json 200': 1,
    'POST /v1/openapi.json 405': 1,
    'GET /healthz 200': 2,
    'GET /readyz 200': 1,
    'DELETE /v1/pets 405': 1,
    'GET unmatched 404': 2,
    'GET unmatched 401': 1,
  });
  for (const s of families.get('http_server_request_duration_seconds')?.series ?? []) {
    if (s.name.endsWith('_sum'))
      assert.ok(s.value > 0 && s.value < 10, `${JSON.stringify(s.labels)}: time spent ${s.value} s`);
  }
  assert.deepEqual(byLabel(families, 'petstore_auth_failures_total', 'reason'), {
    missing_key: 3,
    not_bearer: 1,
    unknown_key: 1,
    repeated_header: 1,
    address_blocked: 0,
    insufficient_scope: 0,
  });
  assert.deepEqual(byLabel(families, 'petstore_http_refused_total', 'reason'), {
    body_limit: 1,
    auth_failure_limit: 0,
    idempotency_key_limit: 0,
    rate_limit: 0,
    max_streams: 0,
    max_streams_per_key: 0,
    store_unavailable: 0,
  });
  assert.equal(metricValue(families, 'petstore_idempotent_replays_total'), 1);
  // Four pets were stored, each by a commit of its own (they came one after another).
  assert.equal(metricValue(families, 'petstore_store_commits_total'), 4);
  assert.equal(metricValue(families, 'petstore_store_committed_creates_total'), 4);
  assert.equal(metricValue(families, 'petstore_store_commit_duration_seconds_count'), 4);
  assert.equal(metricValue(families, 'petstore_store_commit_failures_total'), 0);
  assert.deepEqual(byLabel(families, 'petstore_pets', 'status'), { available: 1, pending: 0, sold: 2, none: 1 });
  assert.equal(metricValue(families, 'petstore_store_ready'), 1);
});

/** A small deterministic generator (mulberry32), so that a failure can be replayed from its seed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

test('label values stay within fixed sets under random ids, paths and methods: no id, path or method a client sends becomes one', async (t) => {
  const server = await metricsServer(t);
  const seed = 20261126;
  const next = random(seed);
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const chars = 'abcXYZ0189%._~-';
  const word = (): string => Array.from({ length: 1 + Math.floor(next() * 12) }, () => pick([...chars])).join('');
  // Methods Node's parser knows (others never reach the service), the router's among them.
  const methods = [
    ...ROUTER_METHODS,
    'PROPFIND',
    'PURGE',
    'MKCOL',
    'COPY',
    'MOVE',
    'LOCK',
    'SEARCH',
    'REPORT',
    'NOTIFY',
    'TRACE',
  ];
  const paths = [
    () => `/v1/pets/${Math.floor(next() * 1e12)}`,
    () => `/v1/pets/${word()}`,
    () => `/v1/pets/${word()}/${word()}`,
    () => `/${word()}`,
    () => `/v1/${word()}`,
    () => `/v1/pets?limit=${word()}`,
    () => `/${word()}/${word()}/${word()}`,
    () => `/v1/pets/-${Math.floor(next() * 1e6)}`,
  ];
  const sent = 300;
  for (let i = 0; i < sent; i++) {
    const method = pick(methods);
    const path = pick(paths)();
    const res = await server.request(method, path, next() < 0.5 ? {} : { auth: false });
    assert.ok(res.status >= 200 && res.status < 500, `${method} ${path} (seed ${seed}): ${res.status} ${res.text}`);
  }
  const { families } = await scrape(server.metricsUrl);
  const series = (families.get('http_server_request_duration_seconds')?.series ?? []).filter((s) =>
    s.name.endsWith('_count'),
  );
  for (const s of series) {
    assert.ok(
      [...ROUTE_TEMPLATES, 'unmatched'].includes(s.labels.http_route as string),
      `route ${s.labels.http_route} (seed ${seed})`,
    );
    assert.ok(
      [...ROUTER_METHODS, '_OTHER'].includes(s.labels.http_request_method as string),
      `method ${s.labels.http_request_method} (seed ${seed})`,
    );
    assert.ok(
      STATUSES.includes(s.labels.http_response_status_code as string),
      `status ${s.labels.http_response_status_code} (seed ${seed})`,
    );
  }
  assert.equal(
    series.reduce((sum, s) => sum + s.value, 0),
    sent,
    'every request is counted once',
  );
});

test("each limit that refuses a request is counted by name: body, failed authentications, idempotency keys, a key's quota, the store; and a missing scope", async (t) => {
  const reader = 'reader-key-0123456789';
  const server = await metricsServer(t, {
    bodyLimit: 100,
    authFailureLimit: 2,
    idempotencyKeyLimit: 1,
    rateLimit: { requests: 3, seconds: 3600 },
    keys: [TEST_KEY, `${reader}:pets:read`],
  });
  await expectStatus(
    server.request('POST', '/v1/pets', { body: '{"name":"r","categoryId":1}', headers: [JSON_TYPE], auth: reader }),
    403,
  );
  const body = (name: string): string => `{"name":"${name}","categoryId":1}`;
  await expectStatus(server.request('POST', '/v1/pets', { body: body('x'.repeat(200)), headers: [JSON_TYPE] }), 413);
  await expectStatus(
    server.request('POST', '/v1/pets', { body: body('a'), headers: [JSON_TYPE, ['idempotency-key', 'one']] }),
    201,
  );
  await expectStatus(
    server.request('POST', '/v1/pets', { body: body('b'), headers: [JSON_TYPE, ['idempotency-key', 'two']] }),
    429,
  );
  // The key's quota of 3 is used up by the three requests above: the fourth is refused by it.
  await expectStatus(server.request('GET', '/v1/pets'), 429);
  // Two failed authentications from this address, then it is refused before its key is looked at.
  await expectStatus(server.request('GET', '/v1/pets', { auth: 'wrong-key-0123456789' }), 401);
  await expectStatus(server.request('GET', '/v1/pets', { auth: 'wrong-key-0123456789' }), 401);
  await expectStatus(server.request('GET', '/v1/pets'), 429);
  const { families } = await scrape(server.metricsUrl);
  assert.deepEqual(byLabel(families, 'petstore_http_refused_total', 'reason'), {
    body_limit: 1,
    auth_failure_limit: 1,
    idempotency_key_limit: 1,
    rate_limit: 1,
    max_streams: 0,
    max_streams_per_key: 0,
    store_unavailable: 0,
  });
  assert.deepEqual(byLabel(families, 'petstore_auth_failures_total', 'reason'), {
    missing_key: 0,
    not_bearer: 0,
    unknown_key: 2,
    repeated_header: 0,
    address_blocked: 1,
    insufficient_scope: 1,
  });
  assert.equal(requestCounts(families)['GET /v1/pets 429'], 2);
  assert.equal(requestCounts(families)['POST /v1/pets 429'], 1);
});

test('the metrics listener serves GET and HEAD /metrics without a key, and answers anything else 404 or 405 in plain text', async (t) => {
  const server = await metricsServer(t);
  const origin = new URL(server.metricsUrl).origin;
  const got = await request(origin, 'GET', '/metrics?name[]=up', { auth: false });
  assert.equal(got.status, 200);
  assert.equal(got.headers['content-type'], EXPOSITION_TYPE);
  const withKey = await request(origin, 'GET', '/metrics');
  assert.equal(withKey.status, 200, 'a key changes nothing there');
  const head = await request(origin, 'HEAD', '/metrics', { auth: false });
  assert.equal(head.status, 200);
  assert.equal(head.text, '');
  assert.ok(Number(head.headers['content-length']) > 1000);
  for (const path of ['/', '/metrics/', '/Metrics', '/v1/pets', '/healthz', '/metrics/../metrics', '/%6detrics']) {
    const res = await request(origin, 'GET', path, { auth: false });
    assert.equal(res.status, 404, path);
    assert.match(res.headers['content-type'] ?? '', /^text\/plain/);
    assert.match(res.text, /serves only GET \/metrics/);
  }
  for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'PROPFIND']) {
    const res = await request(
      origin,
      method,
      '/metrics',
      method === 'POST' ? { auth: false, body: 'x=1' } : { auth: false },
    );
    assert.equal(res.status, 405, method);
    assert.equal(res.headers.allow, 'GET, HEAD');
    assert.match(res.headers['content-type'] ?? '', /^text\/plain/);
  }
  // A request line Node cannot parse is refused by Node and the listener goes on.
  assert.match(await rawRequest(origin, 'GET /metrics HTTP/9\r\n\r\n'), /^HTTP\/1\.1 (400|505)/);
  assert.equal((await request(origin, 'GET', '/metrics', { auth: false })).status, 200);
});

test('the API port never serves /metrics: 401 without a key, 404 with one', async (t) => {
  const server = await metricsServer(t);
  assert.equal((await server.request('GET', '/metrics', { auth: false })).status, 401);
  const res = await server.request('GET', '/metrics');
  assert.equal(res.status, 404);
  assert.equal((res.json as { code: string }).code, 'not_found');
});

test('open connections are counted when scraped, and connections past --max-connections are counted as refused', async (t) => {
  const server = await metricsServer(t, { maxConnections: 2 });
  let parsed = 0;
  server.running.server.on('request', () => parsed++);
  const url = new URL(server.url);
  const sockets: Socket[] = [];
  t.after(() => sockets.forEach((s) => s.destroy()));
  const open = (): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const socket = connect(Number(url.port), url.hostname, () => resolve(socket));
      socket.once('error', reject);
      sockets.push(socket);
    });
  // Each brings a request that stays in progress (a create whose body has not come): only then are
  // they not closed to make room.
  for (let i = 0; i < 2; i++) {
    const socket = await open();
    socket.write(
      `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n`,
    );
  }
  await waitFor(() => parsed === 2, 5000, 'both creates in progress');
  let families = (await scrape(server.metricsUrl)).families;
  assert.equal(metricValue(families, 'petstore_http_open_connections'), 2);
  assert.equal(metricValue(families, 'petstore_http_max_connections'), 2);
  assert.equal(metricValue(families, 'petstore_http_refused_connections_total'), 0);
  const third = await open();
  await new Promise((resolve) => third.once('close', resolve));
  families = (await scrape(server.metricsUrl)).families;
  assert.equal(metricValue(families, 'petstore_http_refused_connections_total'), 1);
  assert.equal(metricValue(families, 'petstore_http_evicted_connections_total'), 0);
  assert.equal(metricValue(families, 'petstore_http_open_connections'), 2);
});

test('event streams and waiting requests are counted when scraped, and those refused at --max-streams by name', {
  timeout: 120_000,
}, async (t) => {
  const server = await metricsServer(t, { maxStreams: 3 });
  const held = async (): Promise<Record<string, number>> =>
    byLabel((await scrape(server.metricsUrl)).families, 'petstore_http_held_requests', 'kind');
  /** Scrapes until the gauge reads `expected` (a request is held a moment after it is sent), at most 5 s. */
  const heldBecomes = async (expected: Record<string, number>): Promise<void> => {
    const reads = async () => JSON.stringify(await held()) === JSON.stringify(expected);
    await waitFor(reads, 5000, `held requests ${JSON.stringify(expected)}`);
  };
  const streams = [await openStream(server.url), await openStream(server.url)];
  t.after(() => streams.forEach((s) => s.close()));
  assert.deepEqual(
    streams.map((s) => s.status),
    [200, 200],
  );
  const waiting = server.request('GET', '/v1/pets?wait=10');
  await heldBecomes({ stream: 2, wait: 1 });
  assert.equal(metricValue((await scrape(server.metricsUrl)).families, 'petstore_http_max_held_requests'), 3);
  await expectStatus(server.request('GET', '/v1/pets', { headers: [['accept', 'text/event-stream']] }), 503);
  await expectStatus(server.request('GET', '/v1/pets?wait=1'), 503);
  // A pet ends the wait; closing the streams frees their places: all leave the gauge.
  await expectStatus(
    server.request('POST', '/v1/pets', { body: '{"name":"w","categoryId":1}', headers: [JSON_TYPE] }),
    201,
  );
  assert.equal((await waiting).status, 200);
  streams.forEach((s) => s.close());
  await heldBecomes({ stream: 0, wait: 0 });
  const { families } = await scrape(server.metricsUrl);
  assert.equal(byLabel(families, 'petstore_http_refused_total', 'reason').max_streams, 2);
  assert.equal(requestCounts(families)['GET /v1/pets 503'], 2);
});
