/**
 * The package as a library: `createPetstore` serves an embedder's own store behind the embedder's own
 * node:http server, passing on what it does not serve. (The guide's examples run in docs-examples.test.ts.)
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { rm, writeFile } from 'node:fs/promises';
import { createServer as createHttpServer, type RequestListener as NodeListener } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { embedServer, request, runNode, TEST_KEY, waitFor } from './support.js';
import {
  createPetstore,
  silentLoggerForTests,
  StoreUnavailableError,
  type ListPage,
  type ListQuery,
  type NewPet,
  type Pet,
  type PetStore,
  type PetstoreService,
  type Petstore,
} from './package.js';

const HERE = __dirname;

/** A PetStore of the embedder's own, in memory; `async` answers through promises, as a database would. */
class MemoryStore implements PetStore {
  readonly pets: Pet[] = [];
  ready = true;
  closed = false;
  #nextId = 1;

  constructor(
    readonly async = false,
    seed: readonly NewPet[] = [],
  ) {
    for (const pet of seed) this.pets.push({ ...pet, id: this.#nextId++ });
  }

  list(query: ListQuery): ListPage | Promise<ListPage> {
    const matching = this.pets.filter(
      (p) => p.id > query.after && (query.status === undefined || p.status === query.status),
    );
    const page = { pets: matching.slice(0, query.limit), more: matching.length > query.limit };
    return this.async ? Promise.resolve(page) : page;
  }

  get(id: number): Pet | undefined | Promise<Pet | undefined> {
    const pet = this.pets.find((p) => p.id === id);
    return this.async ? Promise.resolve(pet) : pet;
  }

  async create(pet: NewPet): Promise<Pet> {
    const stored = { ...pet, id: this.#nextId++ };
    this.pets.push(stored);
    return stored;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.ready = false;
  }
}

// The service's old type name still compiles for embedders of 1.0 (a deprecated alias).
const oldName: (service: PetstoreService) => Petstore = (service) => service;
void oldName;

const ownHandler: NodeListener = (req, res) => {
  res.writeHead(200, { 'content-type': 'text/plain', 'x-served-by': 'embedder' });
  res.end(`own ${req.method} ${req.url}`);
};

const json = (body: string): { headers: Array<[string, string]>; body: string } => ({
  headers: [['content-type', 'application/json']],
  body,
});

for (const async of [false, true]) {
  test(`an embedder's own ${async ? 'asynchronous' : 'synchronous'} store serves create, list and get over HTTP`, async (t) => {
    const store = new MemoryStore(async, [{ name: 'Seeded', categoryId: 5n }]);
    const petstore = await createPetstore({ store, keys: [TEST_KEY], logger: silentLoggerForTests });
    assert.equal(petstore.store, store);
    const url = await embedServer(t, petstore, ownHandler);

    const seeded = await request(url, 'GET', '/v1/pets/1');
    assert.equal(seeded.status, 200);
    assert.deepEqual(seeded.json, { id: 1, name: 'Seeded', categoryId: 5 });

    const created = await request(
      url,
      'POST',
      '/v1/pets',
      json('{"name":"Rex","categoryId":9223372036854775807,"status":"sold"}'),
    );
    assert.equal(created.status, 201);
    assert.equal(created.text, '{"id":2,"name":"Rex","categoryId":9223372036854775807,"status":"sold"}');
    assert.equal(created.headers.location, '/v1/pets/2');
    assert.deepEqual(
      store.pets.at(-1),
      { id: 2, name: 'Rex', categoryId: 9223372036854775807n, status: 'sold' },
      "the pet is in the embedder's store",
    );

    const list = await request(url, 'GET', '/v1/pets');
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.json as Pet[]).map((p) => p.id),
      [1, 2],
    );
    const sold = await request(url, 'GET', '/v1/pets?status=sold');
    assert.deepEqual(
      (sold.json as Pet[]).map((p) => p.id),
      [2],
    );
    const page = await request(url, 'GET', '/v1/pets?limit=1');
    assert.deepEqual(
      (page.json as Pet[]).map((p) => p.id),
      [1],
    );
    assert.match(String(page.headers.link), /after=1>; rel="next"/);

    const fetched = await request(url, 'GET', '/v1/pets/2');
    assert.equal(fetched.status, 200);
    assert.equal(fetched.text, created.text);
    assert.equal((await request(url, 'GET', '/v1/pets/3')).status, 404);
  });
}

test('paths the pet store does not serve fall through to next(); its own paths never do', async (t) => {
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, petstore, ownHandler);
  for (const [method, path] of [
    ['GET', '/'],
    ['GET', '/about?x=1'],
    ['POST', '/api/things'],
    ['GET', '/v2/pets'],
  ] as const) {
    const res = await request(url, method, path, { auth: false });
    assert.equal(res.status, 200, `${method} ${path}`);
    assert.equal(res.headers['x-served-by'], 'embedder');
    assert.equal(res.text, `own ${method} ${path}`);
    assert.equal(res.headers['x-request-id'], undefined, 'the pet store left the response alone');
  }
  const mine = await request(url, 'GET', '/v1/pets', { auth: false });
  assert.equal(mine.status, 401, 'a pet store path without a key is refused, not passed on');
  assert.equal(mine.headers['x-served-by'], undefined);
  const wrongMethod = await request(url, 'DELETE', '/v1/pets');
  assert.equal(wrongMethod.status, 405, "a known path with another method is the pet store's");
  assert.equal((await request(url, 'GET', '/healthz', { auth: false })).status, 200);
});

test('without next, the handler answers unknown paths itself with a JSON 404', async (t) => {
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, petstore);
  const res = await request(url, 'GET', '/about');
  assert.equal(res.status, 404);
  assert.equal((res.json as { code: string }).code, 'not_found');
});

test('an embedded pet store refuses requests without a valid key with 401 and a Bearer challenge', async (t) => {
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, petstore, ownHandler);
  for (const auth of [false, 'not-the-key'] as const) {
    for (const [method, path] of [
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets/1'],
      ['POST', '/v1/pets'],
    ] as const) {
      const res = await request(
        url,
        method,
        path,
        path === '/v1/pets' && method === 'POST' ? { ...json('{"name":"Rex","categoryId":1}'), auth } : { auth },
      );
      assert.equal(res.status, 401, `${method} ${path} with ${String(auth)}`);
      assert.match(String(res.headers['www-authenticate']), /^Bearer realm="petstore"/);
      assert.equal((res.json as { code: string }).code, 'unauthorized');
    }
  }
  assert.equal((await request(url, 'GET', '/v1/pets')).status, 200, 'the configured key works');
});

test('an embedded pet store given no key refuses every /v1 request (fail closed)', async (t) => {
  const store = new MemoryStore(false, [{ name: 'Hidden', categoryId: 1n }]);
  const petstore = await createPetstore({ store, logger: silentLoggerForTests });
  const url = await embedServer(t, petstore, ownHandler);
  for (const auth of [false, TEST_KEY, ''] as const) {
    const res = await request(url, 'GET', '/v1/pets', { auth });
    assert.equal(res.status, 401);
    assert.ok(!res.text.includes('Hidden'));
  }
  // A key that could never be sent as a bearer token is refused when the service is created.
  for (const keys of [[''], ['with space'], ['é']]) {
    await assert.rejects(
      createPetstore({ store: new MemoryStore(), keys, logger: silentLoggerForTests }),
      TypeError,
      JSON.stringify(keys),
    );
  }
});

test("close() closes the embedder's store, and a store that cannot write gives 503", async (t) => {
  const store = new MemoryStore();
  const petstore = await createPetstore({ store, keys: [TEST_KEY], logger: silentLoggerForTests });
  await petstore.close();
  assert.equal(store.closed, true);

  const failing = new MemoryStore();
  failing.create = () => Promise.reject(new StoreUnavailableError('disk full'));
  const failingPetstore = await createPetstore({ store: failing, keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, failingPetstore);
  const res = await request(url, 'POST', '/v1/pets', json('{"name":"Rex","categoryId":1}'));
  assert.equal(res.status, 503);
  assert.ok(!res.text.includes('disk full'), "the store's own message is not passed to the client");
});

test('createPetstore without a store or a data directory is refused', async () => {
  await assert.rejects(createPetstore({ keys: [TEST_KEY], logger: silentLoggerForTests }), TypeError);
});

test('the package loads with require() as well as import, with the same named exports', async (t) => {
  const names = [
    'createPetstore',
    'listen',
    'jsonLogger',
    'FileStore',
    'StoreOpenError',
    'StoreUnavailableError',
    'PET_STATUSES',
  ];
  const base = join(HERE, `tmp-load-${randomBytes(6).toString('hex')}`);
  t.after(() => Promise.all([rm(`${base}.cjs`, { force: true }), rm(`${base}.mjs`, { force: true })]));
  await writeFile(
    `${base}.cjs`,
    `const lib = require('petstore-api');\nconsole.log(JSON.stringify(${JSON.stringify(names)}.map((n) => typeof lib[n])));\n`,
  );
  await writeFile(
    `${base}.mjs`,
    `import * as lib from 'petstore-api';\nconsole.log(JSON.stringify(${JSON.stringify(names)}.map((n) => typeof lib[n])));\n`,
  );
  const expected = JSON.stringify(['function', 'function', 'function', 'function', 'function', 'function', 'object']);
  for (const file of [`${base}.cjs`, `${base}.mjs`]) {
    const { code, stdout, stderr } = await runNode(file, 10_000);
    assert.equal(code, 0, stderr);
    assert.equal(stdout.trim(), expected, file);
  }
});

test("a handler called after the request was read to its end (an embedder's own asynchronous step first) answers a create, never waits for a body that is gone", async (t) => {
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger: silentLoggerForTests });
  const server = createHttpServer((req, res) => {
    // The embedder reads the body itself (its own logging, say) and then hands the request on.
    req.resume();
    req.on('end', () => setImmediate(() => petstore.handler(req, res)));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await petstore.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const answered = request(url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: '{"name":"Rex","categoryId":1}',
  });
  const waited = new Promise<'no answer'>((r) => setTimeout(() => r('no answer'), 3000).unref());
  const res = await Promise.race([answered, waited]);
  assert.notEqual(res, 'no answer', 'answered within 3 s');
  assert.equal(typeof res === 'string' ? 0 : res.status, 400, 'the body it never saw is missing');
});

test('a handler handed a request whose encoding the embedder set reads its body all the same, in pieces too', async (t) => {
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger: silentLoggerForTests });
  const url = await embedServer(t, {
    ...petstore,
    handler: (req, res, next) => {
      req.setEncoding('utf8');
      petstore.handler(req, res, next);
    },
  });
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  let answer = '';
  socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
  const body = '{"name":"Réx","categoryId":1}';
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 12)}`,
  );
  await new Promise((r) => setTimeout(r, 50));
  socket.write(body.slice(12));
  await waitFor(() => /\r\n\r\n.*\}/s.test(answer), 3000, 'the whole answer');
  assert.match(answer, /^HTTP\/1\.1 201 /);
  assert.match(Buffer.from(answer.split('\r\n\r\n')[1] ?? '', 'latin1').toString(), /"name":"Réx"/);
});

test('a handler called once a chunked body over the limit has all arrived answers 413 and closes the connection, whose reading the unread rest has paused', async (t) => {
  const petstore = await createPetstore({
    store: new MemoryStore(),
    keys: [TEST_KEY],
    bodyLimit: 1024,
    logger: silentLoggerForTests,
  });
  // The embedder's own asynchronous step first: by then the request is complete, its body unread.
  const url = await embedServer(t, {
    ...petstore,
    handler: (req, res, next) => void setTimeout(() => petstore.handler(req, res, next), 50),
  });
  const { port } = new URL(url);
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  let answer = '';
  let closed = false;
  socket.setEncoding('latin1').on('data', (text: string) => (answer += text));
  socket.on('close', () => (closed = true)).on('error', () => {});
  const chunk = 'x'.repeat(40 * 1024);
  socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` +
      `1d\r\n{"name":"Rex","categoryId":1}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
  );
  await waitFor(() => closed, 3000, 'the connection closed');
  const head = answer.split('\r\n\r\n')[0] ?? '';
  assert.match(head, /^HTTP\/1\.1 413 /);
  assert.match(head, /\r\nconnection: close\r\n/i);
  assert.equal(closed, true, 'the server closed the connection');
});

test('close flushes the log after the answers its close gave to waiting requests, with a store that closes at once', async (t) => {
  const events: string[] = [];
  const logger = {
    request: (e: { status: number }) => {
      events.push(`request ${e.status}`);
    },
    info() {},
    error() {},
    flush: () => {
      events.push('flush');
    },
  };
  const petstore = await createPetstore({ store: new MemoryStore(), keys: [TEST_KEY], logger });
  const server = createHttpServer(petstore.handler);
  await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const arrived = new Promise<void>((done) => server.once('request', () => done()));
  const answered = new Promise<number>((done, fail) => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () =>
      socket.write(`GET /v1/pets?wait=20 HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${TEST_KEY}\r\n\r\n`),
    );
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
      if (text.includes('\r\n\r\n[]')) {
        socket.destroy();
        done(Number(text.slice(9, 12)));
      }
    });
    socket.on('error', fail);
  });
  await arrived;
  await new Promise((later) => setTimeout(later, 50)); // the long poll is held
  await petstore.close();
  assert.equal(await answered, 200);
  assert.deepEqual(events, ['request 200', 'flush']);
});
