/**
 * gzip by Accept-Encoding: for answers of 1 KiB and more, q-values honoured, `identity;q=0` too, and
 * `Vary: Accept-Encoding` wherever an answer could have been compressed; never the event stream.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { test } from 'node:test';
import zlib, { gunzipSync } from 'node:zlib';
import { acceptsGzip, COMPRESS_MIN_BYTES } from '#dist/http/pipeline/compression.js';
import { startServer, TEST_KEY, type TestServer } from './support.js';
import { openStream } from './stream-support.js';

const BIG = COMPRESS_MIN_BYTES;
const SMALL = COMPRESS_MIN_BYTES - 1;

test('Accept-Encoding: gzip for 1 KiB and more when it is acceptable and not less wanted than identity; smaller only when identity is refused', () => {
  const cases: Array<[string, number, boolean]> = [
    ['gzip', BIG, true],
    ['gzip', SMALL, false],
    ['GZip', BIG, true],
    ['x-gzip', BIG, true],
    ['gzip, deflate, br, zstd', BIG, true],
    ['br', BIG, false],
    ['', BIG, false],
    ['identity', BIG, false],
    ['*', BIG, true],
    ['*;q=0', BIG, false], // nothing acceptable: sent as it is rather than a 406
    ['gzip;q=0', BIG, false],
    ['gzip; q=0.000', BIG, false],
    ['gzip;q=0.001', BIG, true],
    ['gzip;q=0.5', BIG, true], // identity unweighted: gzip is simply acceptable
    ['gzip;q=0.5, identity', BIG, false], // identity preferred
    ['*;q=0.5, identity;q=0.6', BIG, false],
    ['gzip;q=0.5, identity;q=0.5', BIG, true], // a tie: the smaller answer
    ['gzip, identity;q=0', SMALL, true],
    ['gzip, *;q=0', SMALL, true],
    ['*, identity;q=0', SMALL, true],
    ['identity;q=0', BIG, false], // gzip not listed, no *: not acceptable either
    ['*;q=0, identity', BIG, false],
    ['gzip;q=1.5', BIG, false], // malformed weight: the item is ignored
    ['gzip;q=abc, *;q=0.1', BIG, true],
    ['gzip;q=', BIG, false],
    ['gzip;level=9', BIG, true],
    [' gzip ; q=0.8 , identity ; q=0.7 ', BIG, true],
    [',,gzip,,', BIG, true],
  ];
  for (const [header, length, expected] of cases)
    assert.equal(acceptsGzip(header, length), expected, `${JSON.stringify(header)} at ${length} bytes`);
});

interface Raw {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** A GET with these headers, its body as received (not decoded). */
function raw(server: TestServer, path: string, headers: Record<string, string>, method = 'GET'): Promise<Raw> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${server.url}${path}`,
      { method, agent: false, headers: { authorization: `Bearer ${TEST_KEY}`, ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

test('a list of 1 KiB and more goes out gzip-coded to a client that accepts it, the same bytes once decoded, and says Vary: Accept-Encoding either way', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  for (let i = 1; i <= 25; i++) {
    const res = await server.request('POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: `{"name":"A pet with a name of some length ${i}","categoryId":${i}}`,
    });
    assert.equal(res.status, 201);
  }
  const plain = await raw(server, '/v1/pets', {});
  assert.ok(plain.body.length >= BIG, `${plain.body.length} bytes`);
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.headers.vary, 'Accept-Encoding', 'it could have been compressed');

  const zipped = await raw(server, '/v1/pets', { 'accept-encoding': 'gzip, deflate, br' });
  assert.equal(zipped.headers['content-encoding'], 'gzip');
  assert.equal(zipped.headers.vary, 'Accept-Encoding');
  assert.equal(Number(zipped.headers['content-length']), zipped.body.length);
  assert.ok(zipped.body.length < plain.body.length / 3, `${zipped.body.length} of ${plain.body.length} bytes`);
  assert.deepEqual(gunzipSync(zipped.body), plain.body);
  assert.equal(zipped.headers.etag, plain.headers.etag, 'one weak tag for both codings of the page');
  assert.equal(zipped.headers.link, plain.headers.link);

  const head = await raw(server, '/v1/pets', { 'accept-encoding': 'gzip' }, 'HEAD');
  assert.equal(head.headers['content-encoding'], 'gzip');
  assert.equal(head.headers['content-length'], zipped.headers['content-length'], 'HEAD says what GET would send');
  assert.equal(head.body.length, 0);

  const refused = await raw(server, '/v1/pets', { 'accept-encoding': 'gzip;q=0, identity' });
  assert.deepEqual(refused.body, plain.body);
  assert.equal(refused.headers['content-encoding'], undefined);

  const notModified = await raw(server, '/v1/pets', {
    'accept-encoding': 'gzip',
    'if-none-match': String(plain.headers.etag),
  });
  assert.equal(notModified.status, 304);
  assert.equal(notModified.headers['content-encoding'], undefined);
  assert.equal(notModified.headers.vary, 'Accept-Encoding');

  const doc = await raw(server, '/v1/openapi.json', { 'accept-encoding': 'gzip' });
  assert.equal(doc.headers['content-encoding'], 'gzip', 'the interface description too');
  assert.doesNotThrow(() => JSON.parse(gunzipSync(doc.body).toString()));
});

test('the interface description is gzip-coded once, not for every request: the same bytes each time, and no further compression', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const compressions = t.mock.method(zlib, 'gzipSync');
  const first = await raw(server, '/v1/openapi.json', { 'accept-encoding': 'gzip' });
  assert.equal(first.headers['content-encoding'], 'gzip');
  assert.equal(first.headers.vary, 'Accept-Encoding');
  assert.equal(compressions.mock.callCount(), 1, 'compressed at the first request');
  for (let i = 0; i < 5; i++) {
    const again = await raw(server, '/v1/openapi.json', { 'accept-encoding': 'gzip' });
    assert.deepEqual(again.body, first.body);
    assert.equal(again.headers['content-length'], first.headers['content-length']);
    assert.equal(again.headers.vary, 'Accept-Encoding');
  }
  const plain = await raw(server, '/v1/openapi.json', {});
  assert.equal(plain.headers['content-encoding'], undefined);
  assert.equal(plain.headers.vary, 'Accept-Encoding', 'it could have been compressed');
  assert.deepEqual(gunzipSync(first.body), plain.body);
  assert.equal(compressions.mock.callCount(), 1, 'never again');
});

test('an answer under 1 KiB goes out as it is, without Vary, unless the client refuses identity', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  assert.equal(
    (
      await server.request('POST', '/v1/pets', {
        headers: [['content-type', 'application/json']],
        body: '{"name":"Rex","categoryId":1}',
      })
    ).status,
    201,
  );
  for (const path of ['/v1/pets', '/v1/pets/1', '/v1/pets?limit=0', '/healthz']) {
    const res = await raw(server, path, { 'accept-encoding': 'gzip' });
    assert.equal(res.headers['content-encoding'], undefined, path);
    assert.equal(res.headers.vary, undefined, path);
  }
  const forced = await raw(server, '/v1/pets', { 'accept-encoding': 'gzip, identity;q=0' });
  assert.equal(forced.headers['content-encoding'], 'gzip');
  assert.equal(forced.headers.vary, 'Accept-Encoding');
  assert.equal(gunzipSync(forced.body).toString(), '[{"id":1,"name":"Rex","categoryId":1}]');
  const nothing = await raw(server, '/v1/pets', { 'accept-encoding': 'br;q=1, *;q=0' });
  assert.equal(nothing.status, 200, 'nothing acceptable: the answer as it is, not a 406');
  assert.equal(nothing.body.toString(), '[{"id":1,"name":"Rex","categoryId":1}]');
});

test('the event stream is never compressed', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const stream = await openStream(server.url, '/v1/pets', [
    ['accept-encoding', 'gzip'],
    ['accept-encoding', 'gzip, identity;q=0'],
  ]);
  t.after(() => stream.close());
  assert.equal(stream.headers['content-encoding'], undefined);
  await stream.until((text) => text === 'retry: 1000\n\n', 5000, 'the plain retry line');
});
