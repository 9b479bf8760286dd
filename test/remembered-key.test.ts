/**
 * The key a keep-alive connection was last accepted with is remembered (src/http/access/remembered-key.ts),
 * so that its next requests skip parsing and hashing. Remembering must never let a request through
 * that a fresh look at its key would refuse: a revoked key, or another key sent on the same
 * connection (as a proxy does, carrying several clients' requests on one upstream connection).
 */
import assert from 'node:assert/strict';
import { Agent, createServer, request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, type TestContext } from 'node:test';
import { spawnServerFor, tempDirFor } from './support.js';
import { createKey, keysCommand } from './keys-support.js';
import { createPetstore, silentLoggerForTests } from './package.js';

const WRITER = 'remembered-writer-key-0123456789';
const READER = 'remembered-reader-key-0123456789';

interface Answer {
  status: number;
  /** The client's port: the same port is the same connection. */
  port: number;
}

/** One request on `agent`'s single connection. */
function send(
  agent: Agent,
  url: string,
  method: string,
  authorization: string | undefined,
  body?: string,
  path = '/v1/pets',
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = body === undefined ? {} : { 'content-type': 'application/json' };
    if (authorization !== undefined) headers.authorization = authorization;
    const req = httpRequest(`${url}${path}`, { method, agent, headers }, (res) => {
      const port = res.socket.localPort as number;
      res.resume().on('end', () => resolve({ status: res.statusCode as number, port }));
    });
    req.on('error', reject).end(body);
  });
}

function oneConnection(t: TestContext): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  t.after(() => agent.destroy());
  return agent;
}

const PET = '{"name":"Rex","categoryId":1}';

test('on one connection, each request is judged by its own key: another key, a wrong one, or none is not taken for the one before', async (t) => {
  const dir = await tempDirFor(t, 'petstore-remembered-');
  const server = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: `${WRITER},${READER}:pets:read` });
  const agent = oneConnection(t);
  const answers = [
    await send(agent, server.url, 'GET', `Bearer ${WRITER}`),
    await send(agent, server.url, 'GET', `Bearer ${WRITER.slice(0, -1)}x`),
    await send(agent, server.url, 'GET', undefined),
    await send(agent, server.url, 'GET', `bearer ${WRITER}`),
    await send(agent, server.url, 'GET', `Bearer ${READER}`),
  ];
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 401, 401, 200, 200],
  );
  assert.equal(new Set(answers.map((a) => a.port)).size, 1, 'all on one connection');
  // A refusal before the body is read closes the connection (early-answers.test.ts): one pair per connection.
  assert.equal((await send(agent, server.url, 'POST', `Bearer ${WRITER}`, PET)).status, 201);
  assert.equal(
    (await send(agent, server.url, 'POST', `Bearer ${READER}`, PET)).status,
    403,
    'the reader after the writer',
  );
  assert.equal((await send(agent, server.url, 'GET', `Bearer ${READER}`)).status, 200);
  assert.equal((await send(agent, server.url, 'POST', `Bearer ${READER}`, PET)).status, 403, 'the reader after itself');
  assert.equal(
    (await send(agent, server.url, 'POST', `Bearer ${WRITER}`, PET)).status,
    201,
    'the writer after the reader',
  );
});

test('a key revoked while its client keeps its connection open is refused on that connection', async (t) => {
  const dir = await tempDirFor(t, 'petstore-remembered-');
  const { key, id } = await createKey(dir, 'kept open');
  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const agent = oneConnection(t);
  const first = await send(agent, server.url, 'GET', `Bearer ${key}`);
  assert.equal(first.status, 200);
  await keysCommand(dir, ['revoke', id]);
  // The key file is looked at once a second at most: the revocation is seen within that, on this connection too.
  const started = Date.now();
  let answer = first;
  while (answer.status === 200 && Date.now() - started < 3000) {
    await new Promise((r) => setTimeout(r, 100));
    answer = await send(agent, server.url, 'GET', `Bearer ${key}`);
  }
  assert.equal(answer.status, 401, 'the revoked key is refused');
  assert.equal(answer.port, first.port, 'on the connection that was open before the revocation');
});

test('two services embedded side by side (chained with next) on one connection: a key of the first is no key of the second', async (t) => {
  const a = await createPetstore({
    dataDir: await tempDirFor(t, 'petstore-remembered-a-'),
    keys: [WRITER],
    basePath: '/a',
    logger: silentLoggerForTests,
  });
  const b = await createPetstore({
    dataDir: await tempDirFor(t, 'petstore-remembered-b-'),
    keys: [READER],
    basePath: '/b',
    logger: silentLoggerForTests,
  });
  t.after(() => Promise.all([a.close(), b.close()]));
  const server = createServer((req, res) => a.handler(req, res, () => b.handler(req, res)));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const agent = oneConnection(t);
  const answers = [
    await send(agent, url, 'GET', `Bearer ${WRITER}`, undefined, '/a/v1/pets'),
    await send(agent, url, 'GET', `Bearer ${WRITER}`, undefined, '/b/v1/pets'),
    await send(agent, url, 'GET', `Bearer ${READER}`, undefined, '/b/v1/pets'),
    await send(agent, url, 'GET', `Bearer ${READER}`, undefined, '/a/v1/pets'),
  ];
  assert.deepEqual(
    answers.map((x) => x.status),
    [200, 401, 200, 401],
  );
  assert.equal(new Set(answers.map((x) => x.port)).size, 1, 'all on one connection');
});
