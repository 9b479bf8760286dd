/**
 * ETag and If-None-Match on listPets and getPet: a weak tag on every 200, a 304 without a body for a
 * page the client has, a tag that changes exactly when the page does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startServer, type Response, type TestServer } from './support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

async function create(server: TestServer, name: string, status?: string): Promise<void> {
  const body = JSON.stringify({ name, categoryId: 1, ...(status === undefined ? {} : { status }) });
  assert.equal((await server.request('POST', '/v1/pets', { headers: JSON_HEADERS, body })).status, 201);
}

function get(server: TestServer, path: string, ifNoneMatch?: string, method = 'GET'): Promise<Response> {
  return server.request(method, path, { headers: ifNoneMatch === undefined ? [] : [['if-none-match', ifNoneMatch]] });
}

test('every 200 of listPets and getPet has a weak ETag; If-None-Match with it is a 304 without a body that keeps ETag, Cache-Control and Vary', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  for (let i = 1; i <= 30; i++) await create(server, `Pet number ${i}`, i % 2 === 0 ? 'sold' : undefined);
  for (const path of [
    '/v1/pets',
    '/v1/pets?limit=3',
    '/v1/pets?status=sold&after=4',
    '/v1/pets?after=100',
    '/v1/pets/7',
  ]) {
    const full = await get(server, path);
    assert.equal(full.status, 200);
    const etag = full.headers.etag as string;
    assert.match(etag, /^W\/"[!#-~]+"$/, `${path}: a weak tag without comma or space`);
    for (const method of ['GET', 'HEAD']) {
      const again = await get(server, path, etag, method);
      assert.equal(again.status, 304, `${method} ${path}`);
      assert.equal(again.text, '');
      assert.equal(again.headers.etag, etag);
      assert.equal(again.headers['cache-control'], 'no-store');
      assert.equal(again.headers.vary, full.headers.vary, 'the 304 says Vary where the 200 does');
      assert.equal(again.headers['content-type'], undefined);
      assert.equal(again.headers['content-length'], undefined);
      assert.equal(again.headers['content-encoding'], undefined);
      // A list's Link changes only with its tag; getPet's successor Link is on every answer of it.
      assert.equal(
        again.headers.link,
        path.startsWith('/v1/pets/') ? '</v1/pets>; rel="successor-version"' : undefined,
      );
      assert.match(String(again.headers['x-request-id']), /./);
    }
  }
  assert.equal((await get(server, '/v1/pets')).headers.vary, 'Accept-Encoding', 'a page of 20 is over 1 KiB');
  const one = await get(server, '/v1/pets/7', 'W/"pet.7"');
  assert.equal(one.status, 304);
  assert.equal(one.headers.deprecation, '@1795564800', "getPet's 304 is deprecated too");
  assert.equal(one.headers.sunset, 'Thu, 05 Dec 2030 00:00:00 GMT');
});

test("a full page's tag never changes; a last page's changes when a pet joins it, and when one arrives after it (its Link)", async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  for (let i = 1; i <= 3; i++) await create(server, `P${i}`);
  const full = await get(server, '/v1/pets?limit=2');
  const last = await get(server, '/v1/pets?limit=2&after=2');
  assert.equal(full.headers.link, '</v1/pets?limit=2&after=2>; rel="next"');
  assert.equal(last.headers.link, undefined);

  await create(server, 'P4');
  assert.equal((await get(server, '/v1/pets?limit=2', full.headers.etag)).status, 304, 'the full page is what it was');
  const joined = await get(server, '/v1/pets?limit=2&after=2', last.headers.etag);
  assert.equal(joined.status, 200, 'the last page gained a pet');
  assert.notEqual(joined.headers.etag, last.headers.etag);
  assert.equal(joined.headers.link, undefined, 'exactly full, nothing after it yet');

  await create(server, 'P5');
  const after = await get(server, '/v1/pets?limit=2&after=2', joined.headers.etag);
  assert.equal(after.status, 200, 'the same pets, but now a Link: another answer');
  assert.equal(after.text, joined.text);
  assert.equal(after.headers.link, '</v1/pets?limit=2&after=4>; rel="next"');
  assert.notEqual(after.headers.etag, joined.headers.etag);
  assert.equal((await get(server, '/v1/pets?limit=2&after=2', after.headers.etag)).status, 304, 'full now: it stays');
  await create(server, 'P6');
  assert.equal((await get(server, '/v1/pets?limit=2&after=2', after.headers.etag)).status, 304);
});

test("a filtered page's tag changes for a pet of its status only; another query has another tag", async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  await create(server, 'S1', 'sold');
  const sold = await get(server, '/v1/pets?status=sold');
  await create(server, 'P1', 'pending');
  assert.equal(
    (await get(server, '/v1/pets?status=sold', sold.headers.etag)).status,
    304,
    'a pending pet leaves the sold page as it was',
  );
  await create(server, 'S2', 'sold');
  assert.equal((await get(server, '/v1/pets?status=sold', sold.headers.etag)).status, 200);
  // The same pets by another query: another page, another tag.
  const tags = new Set<string>();
  for (const path of [
    '/v1/pets?limit=1',
    '/v1/pets?status=sold&limit=1',
    '/v1/pets?limit=2&after=0',
    '/v1/pets?limit=1&after=-5',
  ]) {
    tags.add((await get(server, path)).headers.etag as string);
  }
  assert.equal(tags.size, 3, 'after=-5 starts at the beginning as after=0 does; the others differ');
});

test('If-None-Match: weak comparison, lists, * ; a tag of another page, or a malformed list, gets the full page', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  await create(server, 'Rex');
  const { etag } = (await get(server, '/v1/pets')).headers as { etag: string };
  const opaque = etag.slice(2);
  const cases: Array<[string, number]> = [
    [etag, 304],
    [opaque, 304], // the strong form of the same tag: weak comparison (RFC 9110 §13.1.2)
    [`"x", ${etag}`, 304],
    [`"x",W/"y" ,  ${opaque}`, 304],
    ['*', 304],
    [' * ', 304],
    ['W/"20.0.all.2"', 200],
    ['"x"', 200],
    ['', 200],
    [`${etag.slice(0, -1)}`, 200], // unterminated
    [`x ${etag}`, 200], // malformed before it: the list is ignored
    [`*, ${etag}`, 200],
  ];
  for (const [header, status] of cases)
    assert.equal((await get(server, '/v1/pets', header)).status, status, `If-None-Match: ${header}`);
  assert.equal((await get(server, '/v1/pets/2', '*')).status, 404, 'no pet, no representation: * matches nothing');
  assert.equal((await get(server, '/v1/pets/1', 'W/"pet.2"')).status, 200);
});
