/**
 * The contract (petstore-api.md) and its binding decisions (decisions.md), checked black-box over
 * real HTTP: one test per behaviour.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test, type TestContext } from 'node:test';
import { rawRequest, startServer, TEST_KEY, type RequestOptions, type Response, type TestServer } from './support.js';

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const JSON_MEDIA = /^application\/json(?:;\s*charset=utf-8)?$/i;
const ERROR_CODES = new Set([
  'invalid_request',
  'unauthorized',
  'not_found',
  'method_not_allowed',
  'request_timeout',
  'payload_too_large',
  'unsupported_media_type',
  'expectation_failed',
  'too_many_requests',
  'headers_too_large',
  'internal_error',
  'unavailable',
]);
const SUNSET = 'Thu, 05 Dec 2030 00:00:00 GMT';
const SUCCESSOR_LINK = '</v1/pets>; rel="successor-version"';
const BODY_LIMIT = 64 * 1024;
const INT64_MAX = '9223372036854775807';
const INT64_MIN = '-9223372036854775808';

type Json = Record<string, unknown>;

/** A fresh server for one test, removed when the test ends. */
async function fresh(t: TestContext, authFailureLimit = 1000): Promise<TestServer> {
  const server = await startServer({ authFailureLimit });
  t.after(() => server.close());
  return server;
}

function post(server: TestServer, body: string | Buffer, options: RequestOptions = {}): Promise<Response> {
  return server.request('POST', '/v1/pets', { headers: [JSON_TYPE], body, ...options });
}

interface Seed {
  name?: string;
  categoryId?: number;
  status?: string;
}

/** Creates the pets in order and checks each got the next id. */
async function seed(server: TestServer, pets: Seed[] | number): Promise<void> {
  const list = typeof pets === 'number' ? Array.from({ length: pets }, (): Seed => ({})) : pets;
  for (const [i, pet] of list.entries()) {
    const res = await post(
      server,
      JSON.stringify({
        name: pet.name ?? `pet${i + 1}`,
        categoryId: pet.categoryId ?? 1,
        ...(pet.status === undefined ? {} : { status: pet.status }),
      }),
    );
    assert.equal(res.status, 201, res.text);
  }
}

const wordRe = (word: string): RegExp => new RegExp(`\\b${word}\\b`);

/** An Error body exactly: {code, message, status}, status equal to the HTTP status, the code expected. */
function assertError(res: Response, status: number, code: string, mentions?: string): void {
  assert.equal(res.status, status, res.text);
  assert.match(String(res.headers['content-type']), JSON_MEDIA);
  const body = res.json as Json;
  assert.equal(typeof body, 'object', res.text);
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
  assert.equal(body.status, status);
  assert.equal(body.code, code);
  assert.ok(ERROR_CODES.has(code));
  assert.equal(typeof body.message, 'string');
  assert.notEqual(body.message, '');
  if (mentions !== undefined) assert.match(body.message as string, wordRe(mentions), `message should name ${mentions}`);
}

function ids(res: Response): number[] {
  assert.equal(res.status, 200, res.text);
  assert.ok(Array.isArray(res.json), res.text);
  return (res.json as Json[]).map((p) => p.id as number);
}

/** The target of the Link rel="next" header, as a path and query on this server; undefined without one. */
function nextLink(server: TestServer, res: Response): string | undefined {
  const header = res.headers.link;
  if (header === undefined) return undefined;
  const next = String(header)
    .split(/,\s*(?=<)/)
    .map((v) => /^<([^>]*)>\s*;\s*rel="?next"?\s*$/.exec(v))
    .find((m) => m !== null);
  assert.ok(next, `Link without rel="next": ${header}`);
  const url = new URL(next[1] as string, `${server.url}/v1/pets`);
  assert.equal(url.pathname, '/v1/pets');
  return url.pathname + url.search;
}

function assertDeprecated(res: Response): void {
  const deprecation = String(res.headers.deprecation);
  assert.match(deprecation, /^@\d+$/);
  assert.ok(Number(deprecation.slice(1)) * 1000 <= Date.parse(SUNSET), `deprecated ${deprecation} after the sunset`);
  assert.equal(res.headers.sunset, SUNSET);
  assert.equal(res.headers.link, SUCCESSOR_LINK);
}

// 25 pets; statuses cycle available, pending, sold, (none).
const CYCLE = ['available', 'pending', 'sold', undefined] as const;
const SEEDED: Seed[] = Array.from({ length: 25 }, (_, i) => {
  const status = CYCLE[i % 4];
  return status === undefined ? { categoryId: i + 1 } : { categoryId: i + 1, status };
});
const idsWith = (status: string): number[] => SEEDED.flatMap((p, i) => (p.status === status ? [i + 1] : []));

describe('listPets', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    await seed(server, SEEDED);
  });
  after(() => server.close());

  test('an empty store lists an empty array without a next link', async (t) => {
    const empty = await fresh(t);
    const res = await empty.request('GET', '/v1/pets');
    assert.equal(res.status, 200);
    assert.equal(res.text, '[]');
    assert.equal(res.headers.link, undefined);
  });

  test('without limit at most 20 pets are returned, the first 20 by id', async () => {
    const res = await server.request('GET', '/v1/pets');
    assert.deepEqual(
      ids(res),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
  });

  test('listed pets carry exactly the stored fields', async () => {
    const res = await server.request('GET', '/v1/pets?limit=4');
    assert.deepEqual(res.json, [
      { id: 1, name: 'pet1', categoryId: 1, status: 'available' },
      { id: 2, name: 'pet2', categoryId: 2, status: 'pending' },
      { id: 3, name: 'pet3', categoryId: 3, status: 'sold' },
      { id: 4, name: 'pet4', categoryId: 4 },
    ]);
  });

  test('limit=1 returns exactly one pet', async () => {
    assert.deepEqual(ids(await server.request('GET', '/v1/pets?limit=1')), [1]);
  });

  test('limit=100 returns 100 of 101 pets and links to the rest', async (t) => {
    const big = await fresh(t);
    await seed(big, 101);
    const res = await big.request('GET', '/v1/pets?limit=100');
    assert.deepEqual(
      ids(res),
      Array.from({ length: 100 }, (_, i) => i + 1),
    );
    const next = nextLink(big, res);
    assert.ok(next !== undefined);
    assert.deepEqual(ids(await big.request('GET', next)), [101]);
  });

  test('limit larger than the number of pets returns them all', async () => {
    assert.deepEqual(
      ids(await server.request('GET', '/v1/pets?limit=100')),
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  for (const bad of ['0', '101', '1e1', '2.5', '', '-3', 'abc', '+5', ' 5', '0x10', '99999999999999999999']) {
    test(`limit=${JSON.stringify(bad)} is refused with 400 naming limit`, async () => {
      assertError(
        await server.request('GET', `/v1/pets?limit=${encodeURIComponent(bad)}`),
        400,
        'invalid_request',
        'limit',
      );
    });
  }

  test('limit given without a value is refused with 400', async () => {
    assertError(await server.request('GET', '/v1/pets?limit'), 400, 'invalid_request', 'limit');
  });

  test('limit given twice is refused with 400, even with equal values', async () => {
    assertError(await server.request('GET', '/v1/pets?limit=2&limit=2'), 400, 'invalid_request', 'limit');
    assertError(await server.request('GET', '/v1/pets?limit=2&limit=3'), 400, 'invalid_request', 'limit');
  });

  for (const status of ['available', 'pending', 'sold']) {
    test(`status=${status} returns only pets with that status, ascending`, async () => {
      const res = await server.request('GET', `/v1/pets?status=${status}`);
      assert.deepEqual(ids(res), idsWith(status));
      for (const pet of res.json as Json[]) assert.equal(pet.status, status);
    });
  }

  for (const bad of ['Available', 'AVAILABLE', 'lost', '', ' available', 'available,sold']) {
    test(`status=${JSON.stringify(bad)} is refused with 400 naming status`, async () => {
      assertError(
        await server.request('GET', `/v1/pets?status=${encodeURIComponent(bad)}`),
        400,
        'invalid_request',
        'status',
      );
    });
  }

  test('pets are listed in ascending id order', async () => {
    const listed = ids(await server.request('GET', '/v1/pets?limit=100'));
    assert.deepEqual(
      listed,
      [...listed].sort((a, b) => a - b),
    );
    assert.equal(new Set(listed).size, 25);
  });

  test('after=N returns the pets with ids greater than N only', async () => {
    assert.deepEqual(ids(await server.request('GET', '/v1/pets?after=3&limit=2')), [4, 5]);
    assert.deepEqual(ids(await server.request('GET', '/v1/pets?after=24')), [25]);
  });

  test('after the last id the page is empty and has no next link', async () => {
    const res = await server.request('GET', '/v1/pets?after=25');
    assert.deepEqual(ids(res), []);
    assert.equal(res.headers.link, undefined);
  });

  test('after combines with the status filter', async () => {
    assert.deepEqual(ids(await server.request('GET', '/v1/pets?status=sold&after=7&limit=2')), [11, 15]);
  });

  test('an after cursor that is not an integer is refused with 400', async () => {
    assertError(await server.request('GET', '/v1/pets?after=abc'), 400, 'invalid_request', 'after');
  });

  test('a next link is present when more pets follow and points after the last one', async () => {
    const res = await server.request('GET', '/v1/pets?limit=4');
    const next = nextLink(server, res);
    assert.ok(next !== undefined);
    const query = new URL(next, server.url).searchParams;
    assert.equal(query.get('after'), '4');
    assert.equal(query.get('limit'), '4');
  });

  test('no next link when the page ends exactly at the last pet', async () => {
    const res = await server.request('GET', '/v1/pets?after=20&limit=5');
    assert.deepEqual(ids(res), [21, 22, 23, 24, 25]);
    assert.equal(res.headers.link, undefined);
  });

  test('no next link when the page ends at the last pet matching the status filter', async () => {
    const available = idsWith('available');
    const res = await server.request('GET', `/v1/pets?status=available&limit=${available.length}`);
    assert.deepEqual(ids(res), available);
    assert.equal(res.headers.link, undefined);
  });

  test('following next links walks every pet exactly once', async () => {
    const seen: number[] = [];
    const sizes: number[] = [];
    let target: string | undefined = '/v1/pets?limit=7';
    for (let pages = 0; target !== undefined && pages < 10; pages++) {
      const res = await server.request('GET', target);
      const page = ids(res);
      seen.push(...page);
      sizes.push(page.length);
      target = nextLink(server, res);
    }
    assert.equal(target, undefined);
    assert.deepEqual(sizes, [7, 7, 7, 4]);
    assert.deepEqual(
      seen,
      Array.from({ length: 25 }, (_, i) => i + 1),
    );
  });

  test('following next links keeps the status filter', async () => {
    const seen: number[] = [];
    let target: string | undefined = '/v1/pets?status=pending&limit=4';
    for (let pages = 0; target !== undefined && pages < 10; pages++) {
      const res = await server.request('GET', target);
      seen.push(...ids(res));
      for (const pet of res.json as Json[]) assert.equal(pet.status, 'pending');
      target = nextLink(server, res);
    }
    assert.equal(target, undefined);
    assert.deepEqual(seen, idsWith('pending'));
  });

  test('unknown query parameters are ignored', async () => {
    assert.deepEqual(ids(await server.request('GET', '/v1/pets?foo=bar&limit=2&x')), [1, 2]);
  });

  test('a malformed percent-encoding in the query is a 400', async () => {
    assertError(await server.request('GET', '/v1/pets?limit=%ZZ'), 400, 'invalid_request');
    assertError(await server.request('GET', '/v1/pets?status=%E0%A4%A'), 400, 'invalid_request');
  });

  test('listPets carries no deprecation headers', async () => {
    const res = await server.request('GET', '/v1/pets?limit=1');
    assert.equal(res.headers.deprecation, undefined);
    assert.equal(res.headers.sunset, undefined);
  });
});

describe('createPet', () => {
  test('a valid NewPet is created: 201, Location /v1/pets/{id} and the Pet', async (t) => {
    const server = await fresh(t);
    const res = await post(server, '{"name":"Rex","categoryId":7,"status":"available"}');
    assert.equal(res.status, 201, res.text);
    assert.equal(res.headers.location, '/v1/pets/1');
    assert.deepEqual(res.json, { id: 1, name: 'Rex', categoryId: 7, status: 'available' });
    const fetched = await server.request('GET', '/v1/pets/1');
    assert.deepEqual(fetched.json, res.json);
  });

  test('a pet created without status has no status field', async (t) => {
    const server = await fresh(t);
    const res = await post(server, '{"name":"Rex","categoryId":7}');
    assert.equal(res.status, 201);
    assert.deepEqual(res.json, { id: 1, name: 'Rex', categoryId: 7 });
    assert.doesNotMatch(res.text, /status/);
    assert.doesNotMatch((await server.request('GET', '/v1/pets/1')).text, /status/);
  });

  test('ids are assigned 1, 2, 3 in order', async (t) => {
    const server = await fresh(t);
    for (const id of [1, 2, 3]) {
      const res = await post(server, `{"name":"p${id}","categoryId":1}`);
      assert.equal(res.status, 201);
      assert.equal((res.json as Json).id, id);
      assert.equal(res.headers.location, `/v1/pets/${id}`);
    }
  });

  test('concurrent creates get distinct ids 1..N and are all listed', async (t) => {
    const server = await fresh(t);
    const results = await Promise.all(
      Array.from({ length: 50 }, (_, i) => post(server, `{"name":"p${i}","categoryId":${i}}`)),
    );
    const assigned = results.map((res) => {
      assert.equal(res.status, 201, res.text);
      const pet = res.json as Json;
      assert.equal(res.headers.location, `/v1/pets/${String(pet.id)}`);
      return pet.id as number;
    });
    assert.deepEqual(
      [...assigned].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
    assert.deepEqual(
      ids(await server.request('GET', '/v1/pets?limit=100')),
      Array.from({ length: 50 }, (_, i) => i + 1),
    );
  });

  test('an unknown field is refused with 400 naming it, and nothing is stored', async (t) => {
    const server = await fresh(t);
    assertError(await post(server, '{"name":"Rex","categoryId":7,"color":"brown"}'), 400, 'invalid_request', 'color');
    assert.equal((await server.request('GET', '/v1/pets')).text, '[]');
  });

  test('a client-sent id is refused with 400 naming id', async (t) => {
    const server = await fresh(t);
    assertError(await post(server, '{"id":5,"name":"Rex","categoryId":7}'), 400, 'invalid_request', 'id');
    assert.equal((await server.request('GET', '/v1/pets')).text, '[]');
  });

  test('a missing name is refused with 400 naming name', async (t) => {
    assertError(await post(await fresh(t), '{"categoryId":7}'), 400, 'invalid_request', 'name');
  });

  test('a missing categoryId is refused with 400 naming categoryId', async (t) => {
    assertError(await post(await fresh(t), '{"name":"Rex"}'), 400, 'invalid_request', 'categoryId');
  });

  test('an empty name is refused with 400', async (t) => {
    assertError(await post(await fresh(t), '{"name":"","categoryId":7}'), 400, 'invalid_request', 'name');
  });

  for (const bad of ['5', 'null', 'true', '["Rex"]', '{"x":1}']) {
    test(`a name of ${bad} is refused with 400`, async (t) => {
      assertError(await post(await fresh(t), `{"name":${bad},"categoryId":7}`), 400, 'invalid_request', 'name');
    });
  }

  test('a name of 256 characters is accepted and returned unchanged', async (t) => {
    const name = 'a'.repeat(256);
    const res = await post(await fresh(t), JSON.stringify({ name, categoryId: 1 }));
    assert.equal(res.status, 201, res.text);
    assert.equal((res.json as Json).name, name);
  });

  test('a name of 257 characters is refused with 400', async (t) => {
    assertError(
      await post(await fresh(t), JSON.stringify({ name: 'a'.repeat(257), categoryId: 1 })),
      400,
      'invalid_request',
      'name',
    );
  });

  test('a name of 256 emoji counts as 256 characters and is accepted', async (t) => {
    const name = '\u{1F436}'.repeat(256);
    const res = await post(await fresh(t), JSON.stringify({ name, categoryId: 1 }));
    assert.equal(res.status, 201, res.text);
    assert.equal((res.json as Json).name, name);
  });

  test('a name of 257 emoji is refused with 400', async (t) => {
    assertError(
      await post(await fresh(t), JSON.stringify({ name: '\u{1F436}'.repeat(257), categoryId: 1 })),
      400,
      'invalid_request',
      'name',
    );
  });

  test('categoryId 9223372036854775807 (int64 max) is kept and returned with every digit', async (t) => {
    const server = await fresh(t);
    const res = await post(server, `{"name":"Big","categoryId":${INT64_MAX}}`);
    assert.equal(res.status, 201, res.text);
    assert.match(res.text, new RegExp(`"categoryId":\\s*${INT64_MAX}[,}]`));
    assert.match((await server.request('GET', '/v1/pets/1')).text, new RegExp(`"categoryId":\\s*${INT64_MAX}[,}]`));
    assert.match((await server.request('GET', '/v1/pets')).text, new RegExp(`"categoryId":\\s*${INT64_MAX}[,}]`));
  });

  test('categoryId -9223372036854775808 (int64 min) is kept and returned with every digit', async (t) => {
    const server = await fresh(t);
    const res = await post(server, `{"name":"Small","categoryId":${INT64_MIN}}`);
    assert.equal(res.status, 201, res.text);
    assert.match(res.text, new RegExp(`"categoryId":\\s*${INT64_MIN}[,}]`));
    assert.match((await server.request('GET', '/v1/pets/1')).text, new RegExp(`"categoryId":\\s*${INT64_MIN}[,}]`));
  });

  test('categoryId 2^53+1 is not rounded', async (t) => {
    const res = await post(await fresh(t), '{"name":"Snowflake","categoryId":9007199254740993}');
    assert.equal(res.status, 201, res.text);
    assert.match(res.text, /"categoryId":\s*9007199254740993[,}]/);
  });

  for (const bad of [
    '9223372036854775808',
    '-9223372036854775809',
    '1.5',
    '"1"',
    '1e2',
    '1.0',
    '-0',
    'true',
    'null',
    '[1]',
    '{}',
  ]) {
    test(`categoryId ${bad} is refused with 400 naming categoryId`, async (t) => {
      const server = await fresh(t);
      assertError(await post(server, `{"name":"Rex","categoryId":${bad}}`), 400, 'invalid_request', 'categoryId');
      assert.equal((await server.request('GET', '/v1/pets')).text, '[]');
    });
  }

  for (const bad of ['"lost"', '"Available"', 'null', '1']) {
    test(`status ${bad} is refused with 400 naming status`, async (t) => {
      assertError(
        await post(await fresh(t), `{"name":"Rex","categoryId":1,"status":${bad}}`),
        400,
        'invalid_request',
        'status',
      );
    });
  }

  for (const body of ['[]', '[{"name":"Rex","categoryId":1}]', '"Rex"', '7', 'null', 'true']) {
    test(`a body that is not an object (${body}) is refused with 400`, async (t) => {
      assertError(await post(await fresh(t), body), 400, 'invalid_request');
    });
  }

  for (const body of [
    '{"name":"Rex",',
    "{'name':'Rex','categoryId':1}",
    '{"name":"Rex","categoryId":1} {}',
    '{"name":"Rex","categoryId":1,}',
    'name=Rex',
  ]) {
    test(`invalid JSON ${JSON.stringify(body)} is refused with 400`, async (t) => {
      assertError(await post(await fresh(t), body), 400, 'invalid_request');
    });
  }

  test('duplicate keys are refused with 400', async (t) => {
    assertError(await post(await fresh(t), '{"name":"Rex","name":"Max","categoryId":1}'), 400, 'invalid_request');
  });

  test('an empty body is refused with 400', async (t) => {
    assertError(await post(await fresh(t), ''), 400, 'invalid_request');
  });

  test('a body that is not UTF-8 is refused with 400', async (t) => {
    const body = Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff, 0xfe]), Buffer.from('","categoryId":1}')]);
    assertError(await post(await fresh(t), body), 400, 'invalid_request');
  });

  test('a deeply nested body is refused with 400', async (t) => {
    const body = `{"name":"Rex","categoryId":1,"x":${'['.repeat(5000)}${']'.repeat(5000)}}`;
    assertError(await post(await fresh(t), body), 400, 'invalid_request');
  });

  for (const type of [
    'text/plain',
    'application/x-www-form-urlencoded',
    'application/jsonx',
    'application/json-patch+json',
    'text/json',
  ]) {
    test(`a body of type ${type} is refused with 415`, async (t) => {
      assertError(
        await post(await fresh(t), '{"name":"Rex","categoryId":1}', { headers: [['content-type', type]] }),
        415,
        'unsupported_media_type',
      );
    });
  }

  test('a 415 names the media type received, or says none was', async (t) => {
    const server = await fresh(t);
    const plain = await post(server, '{}', { headers: [['content-type', 'Text/Plain; charset=utf-8']] });
    assert.equal(
      (plain.json as { message: string }).message,
      'the request body must be application/json; got Text/Plain',
    );
    const none = await post(server, '{}', { headers: [] });
    assert.equal(
      (none.json as { message: string }).message,
      'the request body must be application/json; got no Content-Type',
    );
    const long = await post(server, '{}', { headers: [['content-type', `a/${'b'.repeat(500)}`]] });
    assert.equal(
      (long.json as { message: string }).message,
      `the request body must be application/json; got a/${'b'.repeat(62)}…`,
    );
  });

  test('a body without Content-Type is refused with 415', async (t) => {
    assertError(
      await post(await fresh(t), '{"name":"Rex","categoryId":1}', { headers: [] }),
      415,
      'unsupported_media_type',
    );
  });

  for (const type of ['application/json; charset=utf-8', 'application/json;charset=UTF-8', 'Application/JSON']) {
    test(`a body of type ${type} is accepted`, async (t) => {
      const res = await post(await fresh(t), '{"name":"Rex","categoryId":1}', { headers: [['content-type', type]] });
      assert.equal(res.status, 201, res.text);
      assert.deepEqual(res.json, { id: 1, name: 'Rex', categoryId: 1 });
    });
  }

  test('a body of exactly 64 KiB is accepted', async (t) => {
    const pet = '{"name":"Rex","categoryId":1}';
    const res = await post(await fresh(t), pet + ' '.repeat(BODY_LIMIT - pet.length));
    assert.equal(res.status, 201, res.text);
  });

  test('a body over 64 KiB is refused with 413 and nothing is stored', async (t) => {
    const server = await fresh(t);
    const pet = '{"name":"Rex","categoryId":1}';
    assertError(await post(server, pet + ' '.repeat(BODY_LIMIT + 1 - pet.length)), 413, 'payload_too_large');
    assert.equal((await server.request('GET', '/v1/pets')).text, '[]');
  });

  test('a declared length over 64 KiB is refused with 413 before the body is sent', async (t) => {
    const server = await fresh(t);
    const raw = await rawRequest(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${BODY_LIMIT + 1}\r\nExpect: 100-continue\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 413 /);
    assert.doesNotMatch(raw, /100 Continue/);
    assert.match(raw, /"code":"payload_too_large"/);
  });

  test('a chunked body of exactly the limit is read; one byte more is a 413', async (t) => {
    const server = await fresh(t);
    const pet = '{"name":"Rex","categoryId":1}';
    const chunked = (size: number): string => {
      const body = pet + ' '.repeat(size - pet.length);
      return (
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n` +
        `Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`
      );
    };
    assert.match(await rawRequest(server.url, chunked(BODY_LIMIT)), /^HTTP\/1\.1 201 /);
    const over = await rawRequest(server.url, chunked(BODY_LIMIT + 1));
    assert.match(over, /^HTTP\/1\.1 413 /);
    assert.match(over, /"code":"payload_too_large"/);
  });

  test('a chunked body that grows over 64 KiB is refused with 413', async (t) => {
    const server = await fresh(t);
    const chunk = ' '.repeat(BODY_LIMIT);
    const raw = await rawRequest(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
        `Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
        `1d\r\n{"name":"Rex","categoryId":1}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 413 /);
    assert.match(raw, /"code":"payload_too_large"/);
  });
});

describe('getPet', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    await seed(server, [{ name: 'Rex', categoryId: 7, status: 'sold' }]);
  });
  after(() => server.close());

  test('an existing pet is returned with 200', async () => {
    const res = await server.request('GET', '/v1/pets/1');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { id: 1, name: 'Rex', categoryId: 7, status: 'sold' });
  });

  for (const id of ['2', '999', '0', '-1', INT64_MAX, INT64_MIN]) {
    test(`petId ${id}, a valid int64 without a pet, is 404`, async () => {
      assertError(await server.request('GET', `/v1/pets/${id}`), 404, 'not_found');
    });
  }

  for (const id of [
    'abc',
    '1.5',
    '9223372036854775808',
    '-9223372036854775809',
    '1e3',
    '0x1',
    '%ZZ',
    '%E0%A4%A',
    '%20',
  ]) {
    test(`petId ${id}, not a decimal int64, is 400`, async () => {
      assertError(await server.request('GET', `/v1/pets/${id}`), 400, 'invalid_request', 'petId');
    });
  }

  test('a 200 carries Deprecation, Sunset and the successor Link', async () => {
    const res = await server.request('GET', '/v1/pets/1');
    assert.equal(res.status, 200);
    assertDeprecated(res);
  });

  test('a 404 carries Deprecation, Sunset and the successor Link', async () => {
    const res = await server.request('GET', '/v1/pets/2');
    assert.equal(res.status, 404);
    assertDeprecated(res);
  });

  test('a 400 carries Deprecation, Sunset and the successor Link', async () => {
    const res = await server.request('GET', '/v1/pets/abc');
    assert.equal(res.status, 400);
    assertDeprecated(res);
  });

  test('a 401 carries Deprecation, Sunset and the successor Link', async () => {
    const res = await server.request('GET', '/v1/pets/1', { auth: false });
    assert.equal(res.status, 401);
    assertDeprecated(res);
  });

  test('the Deprecation date is the same on every response', async () => {
    const dates = new Set<unknown>();
    for (const path of ['/v1/pets/1', '/v1/pets/2', '/v1/pets/x'])
      dates.add((await server.request('GET', path)).headers.deprecation);
    dates.add((await server.request('GET', '/v1/pets/1', { auth: false })).headers.deprecation);
    assert.equal(dates.size, 1);
  });
});

describe('authentication', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    await seed(server, 1);
  });
  after(() => server.close());

  const operations: Array<[string, string, RequestOptions]> = [
    ['GET', '/v1/pets', {}],
    ['POST', '/v1/pets', { headers: [JSON_TYPE], body: '{"name":"Rex","categoryId":1}' }],
    ['GET', '/v1/pets/1', {}],
  ];

  function assertUnauthorized(res: Response): void {
    assertError(res, 401, 'unauthorized');
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"');
  }

  for (const [method, path, options] of operations) {
    test(`${method} ${path} without Authorization is 401 with a Bearer challenge`, async () => {
      assertUnauthorized(await server.request(method, path, { ...options, auth: false }));
    });

    test(`${method} ${path} with a wrong key is 401`, async () => {
      assertUnauthorized(await server.request(method, path, { ...options, auth: 'not-the-key' }));
    });
  }

  for (const header of [
    `Basic ${Buffer.from(`user:${TEST_KEY}`).toString('base64')}`,
    `Token ${TEST_KEY}`,
    TEST_KEY,
    'Bearer',
    'Bearer ',
    `Bearer ${TEST_KEY} extra`,
  ]) {
    test(`Authorization ${JSON.stringify(header.replace(TEST_KEY, '<key>'))} is 401`, async () => {
      assertUnauthorized(
        await server.request('GET', '/v1/pets', { auth: false, headers: [['authorization', header]] }),
      );
    });
  }

  for (const scheme of ['bearer', 'BEARER', 'bEaReR']) {
    test(`the scheme name ${scheme} is accepted`, async () => {
      const res = await server.request('GET', '/v1/pets', {
        auth: false,
        headers: [['authorization', `${scheme} ${TEST_KEY}`]],
      });
      assert.equal(res.status, 200, res.text);
      assert.deepEqual(ids(res), [1]);
    });
  }

  test('a key differing only in letter case is refused', async () => {
    assertUnauthorized(await server.request('GET', '/v1/pets', { auth: TEST_KEY.toUpperCase() }));
  });

  test('a key with a prefix of the right key is refused', async () => {
    assertUnauthorized(await server.request('GET', '/v1/pets', { auth: TEST_KEY.slice(0, -1) }));
    assertUnauthorized(await server.request('GET', '/v1/pets', { auth: `${TEST_KEY}x` }));
  });

  test('authentication is checked before an unknown path is reported', async () => {
    assertUnauthorized(await server.request('GET', '/v1/nothing-here', { auth: false }));
  });

  test('authentication is checked before a wrong method is reported', async () => {
    assertUnauthorized(await server.request('DELETE', '/v1/pets', { auth: false }));
  });

  test('authentication is checked before an invalid query or path is reported', async () => {
    assertUnauthorized(await server.request('GET', '/v1/pets?limit=0', { auth: false }));
    assertUnauthorized(await server.request('GET', '/v1/pets/abc', { auth: false }));
  });

  test('authentication is checked before the body is validated', async () => {
    assertUnauthorized(
      await server.request('POST', '/v1/pets', { auth: false, headers: [JSON_TYPE], body: '{"bad":' }),
    );
    assertUnauthorized(
      await server.request('POST', '/v1/pets', { auth: false, headers: [['content-type', 'text/plain']], body: 'x' }),
    );
  });

  test('a refused request creates nothing', async () => {
    await server.request('POST', '/v1/pets', {
      auth: 'wrong',
      headers: [JSON_TYPE],
      body: '{"name":"Nope","categoryId":1}',
    });
    assert.deepEqual(ids(await server.request('GET', '/v1/pets')), [1]);
  });
});

describe('unknown paths and methods', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
  });
  after(() => server.close());

  // `/` and `/v1` point to the reference page and the document instead (reference-page.test.ts).
  for (const path of ['/v1/', '/v1/nothing', '/v2/pets', '/pets', '/v1/pets/', '/v1/pets/1/extra', '/V1/PETS']) {
    test(`unknown path ${path} is 404`, async () => {
      assertError(await server.request('GET', path), 404, 'not_found');
    });
  }

  test('HEAD answers like GET, with the same status and headers and no body', async () => {
    const get = await server.request('GET', '/v1/pets?limit=5');
    const head = await server.request('HEAD', '/v1/pets?limit=5');
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-length'], get.headers['content-length']);
    assert.equal(head.headers['content-type'], 'application/json');
    const missing = await server.request('HEAD', '/v1/pets/999');
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.sunset, SUNSET);
  });

  test('a request in absolute form (http://host/path) is routed by its path', async () => {
    const raw = await rawRequest(
      server.url,
      `GET ${server.url}/v1/pets?limit=1 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(raw, /^HTTP\/1\.1 200 /);
    assert.match(raw, /\r\n\r\n\[/);
  });

  for (const method of ['DELETE', 'PUT', 'PATCH']) {
    test(`${method} /v1/pets is 405 with Allow: GET, HEAD, POST`, async () => {
      const res = await server.request(method, '/v1/pets');
      assertError(res, 405, 'method_not_allowed');
      assert.deepEqual(
        String(res.headers.allow)
          .split(/\s*,\s*/)
          .sort(),
        ['GET', 'HEAD', 'POST'],
      );
    });
  }

  for (const method of ['DELETE', 'PUT', 'POST']) {
    test(`${method} /v1/pets/1 is 405 with Allow: GET, HEAD`, async () => {
      const res = await server.request(method, '/v1/pets/1', { headers: [JSON_TYPE], body: '{}' });
      assertError(res, 405, 'method_not_allowed');
      assert.deepEqual(
        String(res.headers.allow)
          .split(/\s*,\s*/)
          .sort(),
        ['GET', 'HEAD'],
      );
    });
  }
});

describe('every response', () => {
  let server: TestServer;
  let responses: Array<[string, Response]>;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    const json: RequestOptions = { headers: [JSON_TYPE] };
    const cases: Array<[string, string, RequestOptions]> = [
      ['POST', '/v1/pets', { ...json, body: '{"name":"Rex","categoryId":1}' }],
      ['GET', '/v1/pets', {}],
      ['GET', '/v1/pets?limit=0', {}],
      ['GET', '/v1/pets?limit=%E0%A4%A', {}],
      ['GET', '/v1/pets/1', {}],
      ['GET', '/v1/pets/2', {}],
      ['GET', '/v1/pets/%E0%A4%A', {}],
      ['GET', '/v1/pets/99999999999999999999999999999999999999999999999', {}],
      ['GET', '/v1/pets', { auth: false }],
      ['GET', '/v1/pets', { auth: 'wrong' }],
      ['GET', '/v1/nothing', {}],
      ['DELETE', '/v1/pets', {}],
      ['POST', '/v1/pets', { ...json, body: '{"name":' }],
      ['POST', '/v1/pets', { ...json, body: '{"name":"x","categoryId":1e400}' }],
      ['POST', '/v1/pets', { ...json, body: `{"a":${'['.repeat(100)}${']'.repeat(100)}}` }],
      ['POST', '/v1/pets', { ...json, body: Buffer.from([0x7b, 0xc3, 0x28, 0x7d]) }],
      ['POST', '/v1/pets', { ...json, body: '{"__proto__":{"x":1},"name":"a","categoryId":1}' }],
      ['POST', '/v1/pets', { headers: [['content-type', 'text/plain']], body: 'x' }],
      ['POST', '/v1/pets', { ...json, body: ' '.repeat(BODY_LIMIT + 1) }],
      ['GET', '/v1/openapi.json', { auth: false }],
    ];
    responses = [];
    for (const [method, path, options] of cases)
      responses.push([`${method} ${path}`, await server.request(method, path, options)]);
  });
  after(() => server.close());

  test('is application/json, not cached and not sniffed', () => {
    for (const [name, res] of responses) {
      assert.match(String(res.headers['content-type']), JSON_MEDIA, name);
      assert.equal(res.headers['cache-control'], 'no-store', name);
      assert.equal(res.headers['x-content-type-options'], 'nosniff', name);
    }
  });

  test('has a body that parses as JSON', () => {
    for (const [name, res] of responses) assert.notEqual(res.json, undefined, `${name}: ${res.text.slice(0, 200)}`);
  });

  test('that is an error has exactly the Error fields with its own status and a documented code', () => {
    for (const [name, res] of responses) {
      if (res.status < 400) continue;
      const body = res.json as Json;
      assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status'], name);
      assert.equal(body.status, res.status, name);
      assert.ok(ERROR_CODES.has(body.code as string), `${name}: code ${String(body.code)}`);
      assert.match(body.code as string, /^[a-z]+(?:_[a-z]+)*$/, name);
    }
  });

  test('has an X-Request-Id, a new one for each request', () => {
    const seen = new Set<string>();
    for (const [name, res] of responses) {
      const id = res.headers['x-request-id'];
      assert.equal(typeof id, 'string', name);
      assert.notEqual(id, '', name);
      seen.add(id as string);
    }
    assert.equal(seen.size, responses.length);
  });

  test('reveals no stack trace, file path or Node version', () => {
    const leaks = [
      /\bat .*:\d+:\d+/,
      /\.(?:ts|js|mjs):\d+/,
      /node:internal/,
      /\/(?:work|home|usr|tmp|src|dist|var)\//,
      /[A-Z]:\\/,
      new RegExp(process.version.replaceAll('.', '\\.')),
      /\bnode\.?js\b/i,
      /\bError:/,
      /\bTypeError\b|\bSyntaxError\b|\bRangeError\b/,
    ];
    for (const [name, res] of responses) {
      const headers = Object.entries(res.headers)
        .map(([k, v]) => `${k}: ${String(v)}`)
        .join('\n');
      for (const leak of leaks) {
        assert.doesNotMatch(res.text, leak, `${name} body`);
        assert.doesNotMatch(headers, leak, `${name} headers`);
      }
      assert.ok(!res.text.includes(server.dataDir), name);
      assert.equal(res.headers['x-powered-by'], undefined, name);
      assert.equal(res.headers.server, undefined, name);
    }
  });

  test('an X-Request-Id of 128 characters is echoed; one of 129 is replaced by a generated id', async () => {
    const longest = 'a'.repeat(128);
    assert.equal(
      (await server.request('GET', '/v1/pets', { headers: [['x-request-id', longest]] })).headers['x-request-id'],
      longest,
    );
    const tooLong = (await server.request('GET', '/v1/pets', { headers: [['x-request-id', `${longest}b`]] })).headers[
      'x-request-id'
    ];
    assert.match(String(tooLong), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('echoes a plain X-Request-Id sent by the client', async () => {
    for (const id of ['abc-123', 'req.42:retry_1', 'f47ac10b-58cc-4372-a567-0e02b2c3d479']) {
      assert.equal(
        (await server.request('GET', '/v1/pets', { headers: [['x-request-id', id]] })).headers['x-request-id'],
        id,
      );
      assert.equal(
        (await server.request('GET', '/v1/nothing', { auth: false, headers: [['x-request-id', id]] })).headers[
          'x-request-id'
        ],
        id,
      );
    }
  });

  /** The status line and Error body of a raw HTTP answer, checked to be a JSON Error with the base headers. */
  function assertRawError(raw: string, status: number): Json {
    const split = raw.indexOf('\r\n\r\n');
    const head = split === -1 ? raw : raw.slice(0, split);
    assert.match(head, new RegExp(`^HTTP/1\\.1 ${status} `), head);
    assert.match(head, /\r\ncontent-type: application\/json(?:;\s*charset=utf-8)?\r\n/i, head);
    assert.match(head, /\r\ncache-control: no-store\r\n/i, head);
    assert.match(head, /\r\nx-content-type-options: nosniff\r\n/i, head);
    const error = JSON.parse(raw.slice(split + 4)) as Json;
    assert.deepEqual(Object.keys(error).sort(), ['code', 'message', 'status']);
    assert.equal(error.status, status);
    assert.ok(ERROR_CODES.has(error.code as string), String(error.code));
    return error;
  }

  test('a request that is not valid HTTP is answered with a JSON 400 Error', async () => {
    const error = assertRawError(
      await rawRequest(server.url, 'GET /v1/pets HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n'),
      400,
    );
    assert.equal(error.code, 'invalid_request');
  });

  test('an HTTP/1.1 request without Host is answered with a JSON 400 Error', async () => {
    const raw = await rawRequest(
      server.url,
      `GET /v1/pets HTTP/1.1\r\nAuthorization: Bearer ${TEST_KEY}\r\nConnection: close\r\n\r\n`,
    );
    assert.match(assertRawError(raw, 400).message as string, /Host/);
  });

  test('request headers over the size limit are answered with a JSON 431 Error', async () => {
    const raw = await rawRequest(
      server.url,
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assertRawError(raw, 431);
  });

  test('an unsupported Expect header is answered with a JSON 417 Error', async () => {
    const raw = await rawRequest(
      server.url,
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\nExpect: something\r\nConnection: close\r\n\r\n`,
    );
    assertRawError(raw, 417);
  });
});

describe('edges a client meets', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    await server.request('POST', '/v1/pets', { headers: [JSON_TYPE], body: '{"name":"Rex","categoryId":1}' });
  });
  after(() => server.close());

  test('a wrong method on a public path is a 405 without asking for a key', async () => {
    for (const path of ['/healthz', '/readyz', '/v1/openapi.json']) {
      const res = await server.request('POST', path, { auth: false });
      assertError(res, 405, 'method_not_allowed');
      assert.equal(res.headers['www-authenticate'], undefined, path);
      assert.deepEqual(
        String(res.headers.allow)
          .split(/\s*,\s*/)
          .sort(),
        ['GET', 'HEAD'],
        path,
      );
    }
  });

  test('a compressed (Content-Encoding) body is refused with 415 and nothing is stored', async () => {
    const res = await server.request('POST', '/v1/pets', {
      headers: [JSON_TYPE, ['content-encoding', 'gzip']],
      body: '{"name":"Zip","categoryId":1}',
    });
    assertError(res, 415, 'unsupported_media_type');
    assert.ok(!(await server.request('GET', '/v1/pets')).text.includes('Zip'));
  });

  test('an unknown query parameter is ignored even when its encoding is malformed; a known one is a 400', async () => {
    for (const query of ['foo=%ZZ', '%ZZ=1', 'x=%E0%A4%A&limit=1']) {
      assert.equal((await server.request('GET', `/v1/pets?${query}`)).status, 200, query);
    }
    assertError(await server.request('GET', '/v1/pets?limit=%ZZ'), 400, 'invalid_request');
  });

  test('leading zeros in petId change nothing, however many', async () => {
    const res = await server.request('GET', `/v1/pets/${'0'.repeat(40)}1`);
    assert.equal(res.status, 200, res.text);
    assert.equal((res.json as { id: number }).id, 1);
    assertError(await server.request('GET', '/v1/pets/99999999999999999999'), 400, 'invalid_request');
  });
});
