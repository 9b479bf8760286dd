/**
 * The interface description served at GET /v1/openapi.json: what it states, and that it matches what
 * the server actually does (every observed status is declared, every declared operation is served).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startServer, type RequestOptions, type TestServer } from './support.js';
import { openStream } from './stream-support.js';

// A parsed document, walked by key: its shape is what the tests check.
type Json = Record<string, any>;

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const VALID_PET = '{"name":"Rex","categoryId":7}';

interface Operation {
  method: string;
  /** Full path template including the server path, e.g. `/v1/pets/{petId}`. */
  template: string;
  pattern: RegExp;
  op: Json;
}

/** Follows local `$ref`s until a value that is not a reference. */
function deref(doc: Json, value: Json): Json {
  let current = value;
  for (let hops = 0; typeof current.$ref === 'string'; hops++) {
    assert.ok(hops < 20, 'reference cycle');
    const ref = current.$ref as string;
    assert.ok(ref.startsWith('#/'), `non-local $ref ${ref}`);
    current = ref
      .slice(2)
      .split('/')
      .reduce<Json>((node, key) => {
        const next = node[key.replaceAll('~1', '/').replaceAll('~0', '~')] as Json | undefined;
        assert.ok(next !== undefined, `dangling $ref ${ref}`);
        return next;
      }, doc);
  }
  return current;
}

function serverPath(servers: unknown): string | undefined {
  if (!Array.isArray(servers) || servers.length === 0) return undefined;
  const url = (servers[0] as Json).url as string;
  return new URL(url, 'http://localhost').pathname.replace(/\/$/, '');
}

function operations(doc: Json): Operation[] {
  const result: Operation[] = [];
  for (const [key, item] of Object.entries(doc.paths as Json)) {
    for (const method of HTTP_METHODS) {
      const op = (item as Json)[method] as Json | undefined;
      if (op === undefined) continue;
      const base = serverPath(op.servers) ?? serverPath((item as Json).servers) ?? serverPath(doc.servers) ?? '';
      const template = base + key;
      const pattern = new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+')}$`);
      result.push({ method: method.toUpperCase(), template, pattern, op });
    }
  }
  return result;
}

function byId(doc: Json, operationId: string): Operation {
  const found = operations(doc).find((o) => o.op.operationId === operationId);
  assert.ok(found, `no operation ${operationId}`);
  return found;
}

function parameter(doc: Json, operation: Operation, name: string): Json {
  const found = ((operation.op.parameters ?? []) as Json[]).map((p) => deref(doc, p)).find((p) => p.name === name);
  assert.ok(found, `${operation.op.operationId} has no parameter ${name}`);
  return found;
}

describe('GET /v1/openapi.json', () => {
  let server: TestServer;
  let doc: Json;
  before(async () => {
    server = await startServer();
    const res = await server.request('GET', '/v1/openapi.json', { auth: false });
    assert.equal(res.status, 200, res.text);
    doc = res.json as Json;
  });
  after(() => server.close());

  test('is served without authentication as JSON', async () => {
    const res = await server.request('GET', '/v1/openapi.json', { auth: false });
    assert.equal(res.status, 200);
    assert.match(String(res.headers['content-type']), /^application\/json(?:;\s*charset=utf-8)?$/i);
    assert.equal(typeof res.json, 'object');
    assert.deepEqual(res.json, doc);
  });

  test('is also served with a key', async () => {
    const res = await server.request('GET', '/v1/openapi.json');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, doc);
  });

  test('is OpenAPI 3.1', () => {
    assert.match(doc.openapi as string, /^3\.1\.\d+$/);
  });

  test('carries the interface version 1.0.0', () => {
    assert.equal(doc.info.version, '1.0.0');
    assert.equal(typeof doc.info.title, 'string');
  });

  test('declares listPets, createPet and getPet under /v1', () => {
    assert.deepEqual(
      [byId(doc, 'listPets'), byId(doc, 'createPet'), byId(doc, 'getPet')].map((o) => `${o.method} ${o.template}`),
      ['GET /v1/pets', 'POST /v1/pets', 'GET /v1/pets/{petId}'],
    );
  });

  test('has an HTTP bearer security scheme required by the three pet operations', () => {
    const schemes = doc.components.securitySchemes as Json;
    const bearer = Object.keys(schemes).filter((name) => {
      const scheme = deref(doc, schemes[name] as Json);
      return scheme.type === 'http' && String(scheme.scheme).toLowerCase() === 'bearer';
    });
    assert.equal(bearer.length, 1);
    for (const id of ['listPets', 'createPet', 'getPet']) {
      const security = (byId(doc, id).op.security ?? doc.security) as Json[];
      assert.ok(Array.isArray(security) && security.length > 0, `${id} has no security`);
      assert.ok(
        security.every((requirement) => Object.hasOwn(requirement, bearer[0] as string)),
        `${id} does not require bearer auth`,
      );
    }
  });

  test('marks getPet deprecated and no other pet operation', () => {
    assert.equal(byId(doc, 'getPet').op.deprecated, true);
    assert.notEqual(byId(doc, 'listPets').op.deprecated, true);
    assert.notEqual(byId(doc, 'createPet').op.deprecated, true);
  });

  test('defines Error with code, message and status required', () => {
    const error = deref(doc, doc.components.schemas.Error as Json);
    assert.deepEqual([...(error.required as string[])].sort(), ['code', 'message', 'status']);
    assert.equal(deref(doc, error.properties.code as Json).type, 'string');
    assert.equal(deref(doc, error.properties.message as Json).type, 'string');
    assert.equal(deref(doc, error.properties.status as Json).type, 'integer');
  });

  test('every error response of every operation is an Error', () => {
    const error = deref(doc, doc.components.schemas.Error as Json);
    for (const { op } of operations(doc)) {
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) < 400) continue;
        const schema = deref(doc, deref(doc, response as Json).content['application/json'].schema as Json);
        assert.equal(schema, error, `${op.operationId} ${status}`);
      }
    }
  });

  test('limit is an integer query parameter from 1 to 100, default 20', () => {
    const limit = parameter(doc, byId(doc, 'listPets'), 'limit');
    assert.equal(limit.in, 'query');
    assert.notEqual(limit.required, true);
    const schema = deref(doc, limit.schema as Json);
    assert.equal(schema.type, 'integer');
    assert.equal(schema.minimum, 1);
    assert.equal(schema.maximum, 100);
    assert.equal(schema.default, 20);
  });

  test('status is a query parameter with the enum available, pending, sold', () => {
    const status = parameter(doc, byId(doc, 'listPets'), 'status');
    assert.equal(status.in, 'query');
    const schema = deref(doc, status.schema as Json);
    assert.deepEqual([...(schema.enum as string[])].sort(), ['available', 'pending', 'sold']);
  });

  test('wait is an integer query parameter from 0 to 60, default 0; Last-Event-ID and If-None-Match are header parameters', () => {
    const list = byId(doc, 'listPets');
    const wait = parameter(doc, list, 'wait');
    assert.equal(wait.in, 'query');
    assert.deepEqual(
      [deref(doc, wait.schema as Json).type, wait.schema.minimum, wait.schema.maximum, wait.schema.default],
      ['integer', 0, 60, 0],
    );
    assert.equal(parameter(doc, list, 'Last-Event-ID').in, 'header');
    assert.equal(parameter(doc, list, 'If-None-Match').in, 'header');
    assert.equal(parameter(doc, byId(doc, 'getPet'), 'If-None-Match').in, 'header');
  });

  test("listPets answers JSON or an event stream; its 200 and getPet's carry ETag and Vary, and both declare a 304 without a body", () => {
    const list = byId(doc, 'listPets').op.responses as Json;
    assert.deepEqual(Object.keys(list['200'].content as Json), ['application/json', 'text/event-stream']);
    assert.match(
      list['200'].content['text/event-stream'].example as string,
      /^retry: 1000\n\nid: 1\nevent: pet\ndata: \{"id":1,/,
    );
    for (const id of ['listPets', 'getPet']) {
      const responses = byId(doc, id).op.responses as Json;
      for (const name of ['ETag', 'Vary', 'Content-Encoding'])
        assert.ok(Object.hasOwn(responses['200'].headers as Json, name), `${id} 200 declares ${name}`);
      assert.equal(responses['304'].content, undefined, `${id}'s 304 has no body`);
      assert.ok(
        Object.hasOwn(responses['304'].headers as Json, 'ETag') &&
          Object.hasOwn(responses['304'].headers as Json, 'Vary'),
      );
    }
  });

  test('petId is a required int64 path parameter', () => {
    const petId = parameter(doc, byId(doc, 'getPet'), 'petId');
    assert.equal(petId.in, 'path');
    assert.equal(petId.required, true);
    const schema = deref(doc, petId.schema as Json);
    assert.equal(schema.type, 'integer');
    assert.equal(schema.format, 'int64');
  });

  test('createPet requires a JSON NewPet body with name and categoryId', () => {
    const body = deref(doc, byId(doc, 'createPet').op.requestBody as Json);
    assert.equal(body.required, true);
    const schema = deref(doc, body.content['application/json'].schema as Json);
    assert.deepEqual([...(schema.required as string[])].sort(), ['categoryId', 'name']);
    assert.deepEqual(Object.keys(schema.properties as Json).sort(), ['categoryId', 'name', 'status']);
  });
});

describe('the document matches the server', () => {
  let server: TestServer;
  let limited: TestServer;
  let doc: Json;
  before(async () => {
    server = await startServer({ authFailureLimit: 1000 });
    limited = await startServer({ authFailureLimit: 1 });
    doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
    const created = await server.request('POST', '/v1/pets', { headers: [JSON_TYPE], body: VALID_PET });
    assert.equal(created.status, 201);
  });
  after(async () => {
    await server.close();
    await limited.close();
  });

  /** The operation a concrete request goes to, and whether the document declares the status it got. */
  function declares(method: string, path: string, status: number): { operationId: string; declared: boolean } {
    const pathOnly = path.split('?')[0] as string;
    const operation = operations(doc).find((o) => o.method === method && o.pattern.test(pathOnly));
    assert.ok(operation, `no documented operation for ${method} ${pathOnly}`);
    const responses = operation.op.responses as Json;
    const declared = [String(status), `${Math.floor(status / 100)}XX`, 'default'].some((key) =>
      Object.hasOwn(responses, key),
    );
    return { operationId: operation.op.operationId as string, declared };
  }

  const json: RequestOptions = { headers: [JSON_TYPE] };
  const observations: Array<[string, string, string, RequestOptions, number]> = [
    // operationId, method, path, options, status expected from the server
    ['listPets', 'GET', '/v1/pets', {}, 200],
    ['listPets', 'GET', '/v1/pets?limit=0', {}, 400],
    ['listPets', 'GET', '/v1/pets?status=lost', {}, 400],
    ['listPets', 'GET', '/v1/pets', { auth: false }, 401],
    ['listPets', 'GET', '/v1/pets?wait=61', {}, 400],
    ['listPets', 'GET', '/v1/pets', { headers: [['if-none-match', '*']] }, 304],
    ['createPet', 'POST', '/v1/pets', { ...json, body: VALID_PET }, 201],
    ['createPet', 'POST', '/v1/pets', { ...json, body: '{"name":""}' }, 400],
    ['createPet', 'POST', '/v1/pets', { ...json, body: '{' }, 400],
    ['createPet', 'POST', '/v1/pets', { ...json, body: VALID_PET, auth: false }, 401],
    ['createPet', 'POST', '/v1/pets', { ...json, body: ' '.repeat(64 * 1024 + 1) }, 413],
    ['createPet', 'POST', '/v1/pets', { headers: [['content-type', 'text/plain']], body: VALID_PET }, 415],
    ['getPet', 'GET', '/v1/pets/1', {}, 200],
    ['getPet', 'GET', '/v1/pets/abc', {}, 400],
    ['getPet', 'GET', '/v1/pets/1', { auth: false }, 401],
    ['getPet', 'GET', '/v1/pets/999', {}, 404],
    ['getPet', 'GET', '/v1/pets/1', { headers: [['if-none-match', 'W/"pet.1"']] }, 304],
  ];

  for (const [operationId, method, path, options, status] of observations) {
    test(`${operationId}: the ${status} of ${method} ${path}${options.auth === false ? ' without a key' : ''} is declared`, async () => {
      const res = await server.request(method, path, options);
      assert.equal(res.status, status, res.text);
      const found = declares(method, path, res.status);
      assert.equal(found.operationId, operationId);
      assert.ok(found.declared, `${operationId} does not declare ${res.status}`);
    });
  }

  test('the 429 after repeated bad keys is declared for every pet operation', async () => {
    const refused = await limited.request('GET', '/v1/pets', { auth: 'wrong' });
    assert.equal(refused.status, 401);
    const requests: Array<[string, string, RequestOptions]> = [
      ['GET', '/v1/pets', {}],
      ['POST', '/v1/pets', { ...json, body: VALID_PET }],
      ['GET', '/v1/pets/1', {}],
    ];
    for (const [method, path, options] of requests) {
      const res = await limited.request(method, path, options);
      assert.equal(res.status, 429, `${method} ${path}: ${res.text}`);
      assert.ok(declares(method, path, 429).declared, `${method} ${path} does not declare 429`);
    }
  });

  test('every documented operation is served, and what it answers is declared', async () => {
    const ops = operations(doc);
    assert.ok(ops.length >= 4);
    for (const { method, template, op } of ops) {
      const path = template.replace(/\{[^}]+\}/g, '1');
      const options: RequestOptions = method === 'POST' ? { ...json, body: VALID_PET } : {};
      const res = await server.request(method, path, options);
      assert.ok(res.status !== 404 && res.status !== 405, `${op.operationId}: ${method} ${path} gave ${res.status}`);
      assert.ok(declares(method, path, res.status).declared, `${op.operationId} does not declare ${res.status}`);
    }
  });

  /** Each header of an answer the API chose (not HTTP's own framing) is declared on its response, and its value fits the schema there. */
  function assertHeadersDeclared(
    what: string,
    method: string,
    path: string,
    status: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    const pathOnly = path.split('?')[0] as string;
    const operation = operations(doc).find((o) => o.method === method && o.pattern.test(pathOnly));
    const declared = (operation?.op.responses as Json | undefined)?.[String(status)]?.headers as Json | undefined;
    assert.ok(declared !== undefined, `${what}: no headers declared for ${status}`);
    const byName = new Map(
      Object.entries(declared).map(([name, value]) => {
        const ref = (value as Json).$ref as string | undefined;
        return [
          name.toLowerCase(),
          ref === undefined ? value : doc.components.headers[ref.split('/').at(-1) as string],
        ] as const;
      }),
    );
    for (const [name, raw] of Object.entries(headers)) {
      if (['date', 'connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-type'].includes(name))
        continue;
      const schema = byName.get(name)?.schema as Json | undefined;
      assert.ok(schema !== undefined, `${what}: ${name} is sent but not declared`);
      const value = String(raw);
      if (schema.const !== undefined) assert.equal(value, schema.const, `${what}: ${name}`);
      if (schema.enum !== undefined)
        assert.ok((schema.enum as string[]).includes(value), `${what}: ${name} ${value} is not one of ${schema.enum}`);
      if (schema.pattern !== undefined) assert.match(value, new RegExp(schema.pattern as string), `${what}: ${name}`);
    }
  }

  test("every header of listPets' 200, as JSON and as an event stream, of getPet's 200 and of their 304s is declared, its value as declared", async () => {
    for (const [path, headers, status] of [
      ['/v1/pets?limit=1', [], 200],
      ['/v1/pets/1', [], 200],
      ['/v1/pets', [['if-none-match', '*']], 304],
      ['/v1/pets/1', [['if-none-match', '*']], 304],
      [
        '/v1/pets',
        [
          ['accept-encoding', 'gzip'],
          ['if-none-match', 'W/"other"'],
        ],
        200,
      ],
    ] as const) {
      const res = await server.request('GET', path, { headers: headers as unknown as Array<[string, string]> });
      assert.equal(res.status, status, res.text);
      assertHeadersDeclared(`GET ${path}`, 'GET', path, status, res.headers);
    }
    const stream = await openStream(server.url);
    stream.close();
    assert.equal(stream.status, 200);
    assertHeadersDeclared('the event stream', 'GET', '/v1/pets', 200, stream.headers);
  });

  test('the openapi.json operation is documented and declares its 200', async () => {
    const res = await server.request('GET', '/v1/openapi.json', { auth: false });
    assert.equal(res.status, 200);
    assert.ok(declares('GET', '/v1/openapi.json', 200).declared);
  });
});

test('listPets and getPet declare the 503 with Retry-After that a store unable to read answers (a database that is away)', async (t) => {
  const { StoreUnavailableError } = await import('#dist/store/store.js');
  const unreadable = (): never => {
    throw new StoreUnavailableError('the database is away', { operation: 'read' });
  };
  const store = { list: unreadable, get: unreadable, create: unreadable, close: async () => {}, ready: false };
  const server = await startServer({ store: store as never });
  t.after(() => server.close());
  const doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
  for (const [operationId, path] of [
    ['listPets', '/v1/pets'],
    ['getPet', '/v1/pets/1'],
  ] as const) {
    const res = await server.request('GET', path);
    assert.equal(res.status, 503, res.text);
    assert.equal(res.headers['retry-after'], '1');
    const declared = (byId(doc, operationId).op.responses as Json)['503'] as Json | undefined;
    assert.ok(declared !== undefined, `${operationId} declares 503 itself, not only as "default"`);
    assert.ok(Object.hasOwn(declared.headers as Json, 'Retry-After'), `${operationId}'s 503 declares Retry-After`);
    assert.match(deref(doc, declared.content['application/json'].schema as Json).required.join(','), /code/);
  }
});

test('each pet operation names the scope it needs in its security requirement and declares the 403 with that challenge and the 429 rate_limited', async (t) => {
  const server = await startServer({
    keys: ['reader-key-0123456789:pets:read', 'writer-key-0123456789:pets:write'],
    rateLimit: { requests: 10, seconds: 60 },
  });
  t.after(() => server.close());
  const doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
  const scheme = doc.components.securitySchemes.bearerAuth as Json;
  assert.match(scheme.description as string, /pets:read \(listPets, getPet\) and pets:write \(createPet\)/);
  const cases = [
    { operationId: 'listPets', method: 'GET', path: '/v1/pets', scope: 'pets:read', other: 'writer-key-0123456789' },
    { operationId: 'getPet', method: 'GET', path: '/v1/pets/1', scope: 'pets:read', other: 'writer-key-0123456789' },
    { operationId: 'createPet', method: 'POST', path: '/v1/pets', scope: 'pets:write', other: 'reader-key-0123456789' },
  ];
  for (const { operationId, method, path, scope, other } of cases) {
    const { op } = byId(doc, operationId);
    assert.deepEqual(op.security, [{ bearerAuth: [scope] }], operationId);
    const forbidden = await server.request(method, path, { auth: other, headers: [JSON_TYPE], body: VALID_PET });
    assert.equal(forbidden.status, 403, forbidden.text);
    const declared403 = (op.responses as Json)['403'] as Json;
    const challenge = declared403.headers['WWW-Authenticate'].schema.const;
    assert.equal(challenge, forbidden.headers['www-authenticate'], `${operationId} declares the challenge it sends`);
    for (const [status, response] of Object.entries(op.responses as Json)) {
      if (status === '401' || status === 'default') continue;
      const headers = (response as Json).headers as Json;
      for (const name of ['RateLimit-Policy', 'RateLimit']) {
        const value = forbidden.headers[name.toLowerCase()] as string;
        assert.match(
          value,
          new RegExp(deref(doc, headers[name] as Json).schema.pattern as string),
          `${operationId} ${status} declares ${name}`,
        );
      }
    }
  }
  for (const { operationId } of cases)
    assert.match(((byId(doc, operationId).op.responses as Json)['429'] as Json).description as string, /rate_limited/);
  for (const id of ['getOpenApi', 'getHealth', 'getReadiness']) {
    const { op } = byId(doc, id);
    assert.deepEqual(op.security, [], `${id} needs no key`);
    assert.equal((op.responses as Json)['403'], undefined, `${id} never answers 403`);
  }
});
