/**
 * CORS: off unless origins are configured; then allowed origins may read the headers the API relies
 * on, preflights are answered without a key, and other origins get nothing that lets them in.
 */
import assert from 'node:assert/strict';
import type { IncomingHttpHeaders } from 'node:http';
import { test } from 'node:test';
import { startServer } from './support.js';
import { openStream } from './stream-support.js';

const APP = 'https://app.example';
const EVIL = 'https://evil.example';

const corsHeaderNames = (headers: IncomingHttpHeaders): string[] =>
  Object.keys(headers).filter((h) => h.startsWith('access-control-'));

const listOf = (value: string | string[] | undefined): string[] =>
  String(value ?? '')
    .split(',')
    .map((v) => v.trim().toLowerCase())
    .filter((v) => v !== '');

test('without --cors-origin no response carries an Access-Control-* header', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const responses = [
    await server.request('GET', '/v1/pets', { headers: [['origin', APP]] }),
    await server.request('GET', '/v1/pets', { headers: [['origin', APP]], auth: false }),
    await server.request('GET', '/v1/pets/1', { headers: [['origin', APP]] }),
    await server.request('OPTIONS', '/v1/pets', {
      headers: [
        ['origin', APP],
        ['access-control-request-method', 'POST'],
      ],
      auth: false,
    }),
    await server.request('GET', '/healthz', { headers: [['origin', APP]], auth: false }),
  ];
  for (const res of responses) assert.deepEqual(corsHeaderNames(res.headers), [], `status ${res.status}`);
  assert.notEqual(responses[3]?.status, 204, 'no preflight is answered when CORS is off');
});

test("an allowed origin gets Access-Control-Allow-Origin and may read Link, Location, Deprecation, Sunset, the RateLimit fields and a 403's challenge", async (t) => {
  const server = await startServer({ corsOrigin: APP });
  t.after(() => server.close());
  const list = await server.request('GET', '/v1/pets', { headers: [['origin', APP]] });
  assert.equal(list.status, 200);
  assert.equal(list.headers['access-control-allow-origin'], APP);
  const exposed = listOf(list.headers['access-control-expose-headers']);
  // Exactly the response headers a script needs beyond the CORS-safelisted ones, no more and no fewer.
  assert.deepEqual(exposed.sort(), [
    'deprecation',
    'etag',
    'idempotent-replayed',
    'link',
    'location',
    'ratelimit',
    'ratelimit-policy',
    'retry-after',
    'sunset',
    'www-authenticate',
    'x-request-id',
  ]);
  assert.ok(listOf(list.headers.vary).includes('origin'), 'a per-origin answer says Vary: Origin');

  const created = await server.request('POST', '/v1/pets', {
    headers: [
      ['origin', APP],
      ['content-type', 'application/json'],
    ],
    body: '{"name":"Rex","categoryId":1}',
  });
  assert.equal(created.status, 201);
  assert.equal(created.headers['access-control-allow-origin'], APP);

  const denied = await server.request('GET', '/v1/pets', { headers: [['origin', APP]], auth: false });
  assert.equal(denied.status, 401);
  assert.equal(denied.headers['access-control-allow-origin'], APP, 'a browser script can read the 401 too');
});

test('an event stream to an allowed origin carries the CORS headers of every answer', async (t) => {
  const server = await startServer({ corsOrigin: APP });
  t.after(() => server.close());
  const stream = await openStream(server.url, '/v1/pets', [['origin', APP]]);
  t.after(() => stream.close());
  assert.equal(stream.headers['content-type'], 'text/event-stream');
  assert.equal(stream.headers['access-control-allow-origin'], APP);
  assert.ok(listOf(stream.headers['access-control-expose-headers']).includes('etag'));
});

test('a preflight without Authorization gets 204 with the allowed methods and headers', async (t) => {
  const server = await startServer({ corsOrigin: APP });
  t.after(() => server.close());
  const res = await server.request('OPTIONS', '/v1/pets', {
    headers: [
      ['origin', APP],
      ['access-control-request-method', 'POST'],
      ['access-control-request-headers', 'authorization, content-type'],
    ],
    auth: false,
  });
  assert.equal(res.status, 204);
  assert.equal(res.text, '');
  // RFC 9110 §8.6: a 204 carries no Content-Length (and, having no content, no Content-Type).
  assert.equal(res.headers['content-length'], undefined);
  assert.equal(res.headers['content-type'], undefined);
  assert.equal(res.headers['access-control-allow-origin'], APP);
  const methods = listOf(res.headers['access-control-allow-methods']);
  assert.ok(methods.includes('get') && methods.includes('post'), `methods: ${methods.join(', ')}`);
  const headers = listOf(res.headers['access-control-allow-headers']);
  assert.deepEqual(headers.sort(), [
    'authorization',
    'content-type',
    'idempotency-key',
    'if-none-match',
    'last-event-id',
    'x-request-id',
  ]);

  const item = await server.request('OPTIONS', '/v1/pets/1', {
    headers: [
      ['origin', APP],
      ['access-control-request-method', 'GET'],
    ],
    auth: false,
  });
  assert.equal(item.status, 204);
  assert.ok(listOf(item.headers['access-control-allow-methods']).includes('get'));
});

test('an origin that is not allowed gets no Access-Control-Allow-Origin, also on a preflight', async (t) => {
  const server = await startServer({ corsOrigin: APP });
  t.after(() => server.close());
  const get = await server.request('GET', '/v1/pets', { headers: [['origin', EVIL]] });
  assert.equal(get.status, 200);
  assert.equal(get.headers['access-control-allow-origin'], undefined);
  assert.equal(get.headers['access-control-expose-headers'], undefined);

  const preflight = await server.request('OPTIONS', '/v1/pets', {
    headers: [
      ['origin', EVIL],
      ['access-control-request-method', 'POST'],
    ],
    auth: false,
  });
  assert.notEqual(preflight.status, 204);
  assert.deepEqual(corsHeaderNames(preflight.headers), []);

  const sameSuffix = await server.request('GET', '/v1/pets', { headers: [['origin', `${APP}.evil.example`]] });
  assert.equal(sameSuffix.headers['access-control-allow-origin'], undefined, 'origins match exactly, not by prefix');
  const noOrigin = await server.request('GET', '/v1/pets');
  assert.equal(noOrigin.headers['access-control-allow-origin'], undefined);
});

test('a comma-separated list allows each origin in it, and * allows any', async (t) => {
  const listed = await startServer({ corsOrigin: `${APP}, https://admin.example` });
  t.after(() => listed.close());
  for (const origin of [APP, 'https://admin.example']) {
    const res = await listed.request('GET', '/v1/pets', { headers: [['origin', origin]] });
    assert.equal(res.headers['access-control-allow-origin'], origin);
  }
  assert.equal(
    (await listed.request('GET', '/v1/pets', { headers: [['origin', EVIL]] })).headers['access-control-allow-origin'],
    undefined,
  );

  const any = await startServer({ corsOrigin: '*' });
  t.after(() => any.close());
  const res = await any.request('GET', '/v1/pets', { headers: [['origin', EVIL]] });
  assert.equal(res.headers['access-control-allow-origin'], '*');
});
