/**
 * The `Idempotency-Key` header as RFC 8941 defines an Item: a String that may carry parameters
 * (`;key[=bare-item]`, §3.1.2), which are read strictly and then ignored.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { TEST_KEY, rawRequest, request, startServer, type Response } from './support.js';

const PET = '{"name":"Rex","categoryId":1}';

function create(url: string, key: string): Promise<Response> {
  return request(url, 'POST', '/v1/pets', {
    headers: [
      ['content-type', 'application/json'],
      ['idempotency-key', key],
    ],
    body: PET,
  });
}

test('a quoted key with RFC 8941 parameters is the key without them: parameters are ignored', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const first = await create(server.url, '"abc-123";p=1');
  assert.equal(first.status, 201, first.text);
  // Every kind of bare item as a parameter value, and a parameter without one (true).
  const forms = [
    '"abc-123"',
    '"abc-123";p=1;q',
    '"abc-123"; p=-12;x="a \\" b";t=tok/en:x;b=:aGVsbG8=:;f=?0;d=-123456789012.125',
    '"abc-123";*k.e_y-1=*star',
    '"abc-123";p=123456789012345;p=2',
  ];
  for (const key of forms) {
    const again = await create(server.url, key);
    assert.equal(again.status, 201, `${key}: ${again.text}`);
    assert.equal(again.headers['idempotent-replayed'], 'true', `${key} is the key "abc-123"`);
    assert.equal(again.text, first.text, key);
  }
  // Unquoted, the whole value is the key (decisions: a bare key is taken as it is): another key.
  const bare = await create(server.url, 'abc-123;p=1');
  assert.equal(bare.status, 201);
  assert.equal(bare.headers['idempotent-replayed'], undefined);
});

test('malformed parameters are a 400 naming the header, and store nothing', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const bad = [
    '"abc";',
    '"abc";;p=1',
    '"abc";P=1',
    '"abc";1p=1',
    '"abc";p=',
    '"abc";p="open',
    '"abc";p=1.2345',
    '"abc";p=1234567890123.5',
    '"abc";p=1234567890123456',
    '"abc";p=?2',
    '"abc";p=:not base64!:',
    '"abc";p=@1659578233',
    '"abc";p=%"x"',
    '"abc" ;p=1',
    '"abc";p =1',
    '"abc";p= 1',
    '"abc"x',
    '"abc";p=1,"def"',
    '"abc";p=-',
    '"abc";p=1.',
    '"abc";p=a b',
  ];
  for (const key of bad) {
    const raw = await rawRequest(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
        `Content-Type: application/json\r\nIdempotency-Key: ${key}\r\nContent-Length: ${PET.length}\r\nConnection: close\r\n\r\n${PET}`,
    );
    assert.match(raw, /^HTTP\/1\.1 400 /, key);
    assert.match(raw, /"message":"the Idempotency-Key header /, key);
  }
  assert.deepEqual((await request(server.url, 'GET', '/v1/pets')).json, []);
});
