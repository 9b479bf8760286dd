/**
 * Scopes: a key holds pets:read (list, get), pets:write (create), or both. A key without the scope an
 * operation needs gets 403 insufficient_scope with the RFC 6750 challenge, and nothing is done;
 * authentication comes first; the bad-key limiter does not count a 403; the log names the key's id.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { openStream } from './stream-support.js';
import type { RequestLogEntry } from './package.js';
import {
  request,
  runCli,
  spawnServerFor,
  startServer,
  stopProcess,
  tempDirFor,
  waitFor,
  type Response,
} from './support.js';

const FULL = 'full-key-0123456789abcdef';
const READ = 'read-key-0123456789abcdef';
const WRITE = 'write-key-0123456789abcdef';
const KEYS = [FULL, `${READ}:pets:read`, `${WRITE}:pets:write`];
const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

const challenge = (scope: string): string => `Bearer realm="petstore", error="insufficient_scope", scope="${scope}"`;

function assertForbidden(res: Response, scope: string, what: string): void {
  assert.equal(res.status, 403, `${what}: ${res.text}`);
  assert.equal(res.headers['www-authenticate'], challenge(scope), what);
  assert.deepEqual(
    res.json,
    {
      code: 'insufficient_scope',
      message: `this API key does not hold the scope ${scope}, which this operation needs`,
      status: 403,
    },
    what,
  );
  assert.equal(res.headers['content-type'], 'application/json');
}

const OPERATIONS = [
  { name: 'listPets', method: 'GET', path: '/v1/pets', scope: 'pets:read', ok: 200 },
  { name: 'listPets (HEAD)', method: 'HEAD', path: '/v1/pets', scope: 'pets:read', ok: 200 },
  { name: 'getPet', method: 'GET', path: '/v1/pets/1', scope: 'pets:read', ok: 200 },
  { name: 'createPet', method: 'POST', path: '/v1/pets', scope: 'pets:write', ok: 201 },
] as const;

test('each scope against each operation: pets:read lists and gets, pets:write creates, both do all; the rest is 403 with the challenge', async (t) => {
  const server = await startServer({ keys: KEYS });
  t.after(() => server.close());
  assert.equal(
    (
      await server.request('POST', '/v1/pets', {
        auth: FULL,
        headers: JSON_HEADERS,
        body: '{"name":"first","categoryId":1}',
      })
    ).status,
    201,
  );
  const holds: Record<string, readonly string[]> = {
    [FULL]: ['pets:read', 'pets:write'],
    [READ]: ['pets:read'],
    [WRITE]: ['pets:write'],
  };
  for (const [key, scopes] of Object.entries(holds)) {
    for (const op of OPERATIONS) {
      const what = `${op.name} with a key holding ${scopes.join(' and ')}`;
      const body =
        op.method === 'POST' ? { headers: JSON_HEADERS, body: `{"name":"by ${key.slice(0, 4)}","categoryId":2}` } : {};
      const res = await server.request(op.method, op.path, { auth: key, ...body });
      if (scopes.includes(op.scope)) assert.equal(res.status, op.ok, `${what}: ${res.text}`);
      else if (op.method === 'HEAD') assert.equal(res.status, 403, what);
      else assertForbidden(res, op.scope, what);
    }
  }
  // Only the two keys that may create did: the refused create stored nothing.
  const names = ((await server.request('GET', '/v1/pets', { auth: READ })).json as Array<{ name: string }>).map(
    (p) => p.name,
  );
  assert.deepEqual(names, ['first', `by ${FULL.slice(0, 4)}`, `by ${WRITE.slice(0, 4)}`]);
});

test('the pet stream and a waiting list are reads: pets:read opens them, a create-only key gets the 403 and holds no place', {
  timeout: 120_000,
}, async (t) => {
  const server = await startServer({ keys: KEYS, maxStreams: 1 });
  t.after(() => server.close());
  const stream: Array<[string, string]> = [['accept', 'text/event-stream']];
  assertForbidden(
    await server.request('GET', '/v1/pets', { auth: WRITE, headers: stream }),
    'pets:read',
    'a stream with a create-only key',
  );
  assertForbidden(
    await server.request('GET', '/v1/pets?wait=5', { auth: WRITE }),
    'pets:read',
    'a wait with a create-only key',
  );
  // Refused before the feed was asked: the one place --max-streams gives is still free for a reader.
  const opened = await openStream(server.url, '/v1/pets', [], READ);
  t.after(() => opened.close());
  assert.equal(opened.status, 200);
  assert.equal(opened.headers['content-type'], 'text/event-stream');
  await opened.until((text) => text.startsWith('retry:'), 5000, 'the stream begins');
});

test('the interface description, /healthz and /readyz need no scope: every key, and none, gets them', async (t) => {
  const server = await startServer({ keys: KEYS });
  t.after(() => server.close());
  for (const path of ['/v1/openapi.json', '/healthz', '/readyz']) {
    for (const auth of [READ, WRITE, FULL, false] as const) {
      const res = await server.request('GET', path, { auth });
      assert.equal(res.status, 200, `${path} with ${auth === false ? 'no key' : auth}`);
      assert.equal(res.headers['www-authenticate'], undefined);
    }
  }
});

test('authentication comes first: a wrong or missing key on an operation the right key could not do either is 401, not 403', async (t) => {
  const server = await startServer({ keys: KEYS });
  t.after(() => server.close());
  for (const auth of [false, 'not-a-key-0123456789', `${READ}x`] as const) {
    const res = await server.request('POST', '/v1/pets', {
      auth,
      headers: JSON_HEADERS,
      body: '{"name":"x","categoryId":1}',
    });
    assert.equal(res.status, 401, `${String(auth)}: ${res.text}`);
    assert.equal(res.headers['www-authenticate'], 'Bearer realm="petstore"');
  }
  // A read-only key that asks for a path that does not exist, or a method a path lacks: the usual 404 and 405.
  assert.equal((await server.request('GET', '/v1/nothing', { auth: READ })).status, 404);
  assert.equal((await server.request('DELETE', '/v1/pets', { auth: READ })).status, 405);
});

test('a 403 is not a failed authentication: the bad-key limiter does not count it', async (t) => {
  const server = await startServer({ keys: KEYS, authFailureLimit: 2 });
  t.after(() => server.close());
  for (let i = 0; i < 5; i++)
    assert.equal(
      (
        await server.request('POST', '/v1/pets', {
          auth: READ,
          headers: JSON_HEADERS,
          body: '{"name":"x","categoryId":1}',
        })
      ).status,
      403,
    );
  assert.equal(
    (await server.request('GET', '/v1/pets', { auth: 'wrong-key-0123456789' })).status,
    401,
    'the first bad key after five 403s is a 401, not a 429',
  );
  assert.equal((await server.request('GET', '/v1/pets', { auth: READ })).status, 200);
});

test('the log entry of a refused request names the key by id and the reason by its code; the key is never logged', async (t) => {
  const entries: RequestLogEntry[] = [];
  const logger = { request: (entry: RequestLogEntry) => void entries.push(entry), info() {}, error() {} };
  const server = await startServer({ keys: KEYS, logger });
  t.after(() => server.close());
  await server.request('POST', '/v1/pets', {
    auth: READ,
    headers: [...JSON_HEADERS, ['x-request-id', 'refused-1']],
    body: '{"name":"x","categoryId":1}',
  });
  await server.request('GET', '/v1/pets', { auth: READ, headers: [['x-request-id', 'allowed-1']] });
  await server.request('GET', '/v1/pets', { auth: 'wrong-key-0123456789', headers: [['x-request-id', 'unknown-1']] });
  const byId = (id: string): RequestLogEntry | undefined => entries.find((e) => e.id === id);
  // The fields that are set (a request without traceparent has none of its ids).
  const set = Object.fromEntries(
    Object.entries({ ...byId('refused-1'), ms: 0 }).filter(([, value]) => value !== undefined),
  );
  assert.deepEqual(set, {
    id: 'refused-1',
    method: 'POST',
    path: '/v1/pets',
    status: 403,
    ms: 0,
    client: '127.0.0.1',
    code: 'insufficient_scope',
    keyId: 'env-2',
  });
  assert.equal(byId('allowed-1')?.code, undefined);
  assert.equal(byId('allowed-1')?.keyId, undefined);
  assert.equal(byId('unknown-1')?.code, 'unauthorized');
  assert.equal(byId('unknown-1')?.keyId, undefined, 'no key was accepted');
  assert.ok(!JSON.stringify(entries).includes(READ));
});

test('the server\'s log line of a 403 carries "code" and "keyId"; a key from keys.json is named by its id', async (t) => {
  const dir = await tempDirFor(t, 'petstore-scopes-');
  const created = await runCli(['keys', 'create', '--label', 'page', '--scope', 'pets:read', '--data-dir', dir]);
  assert.equal(created.code, 0, created.stderr);
  const id = /^created key (\S+) /.exec(created.stdout)?.[1] as string;
  const key = created.stdout.trim().split('\n').at(-1) as string;
  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const res = await request(server.url, 'POST', '/v1/pets', {
    auth: key,
    headers: [...JSON_HEADERS, ['x-request-id', 'refused-2']],
    body: '{"name":"x","categoryId":1}',
  });
  assertForbidden(res, 'pets:write', 'a pets:read key from keys.json');
  await waitFor(() => server.stdout().includes('"id":"refused-2"'), 3000, 'the request line is written');
  assert.match(
    server.stdout(),
    new RegExp(
      `"id":"refused-2","method":"POST","path":"/v1/pets","status":403,"ms":[0-9.]+,"client":"127\\.0\\.0\\.1","code":"insufficient_scope","keyId":"${id}"}\\n`,
    ),
  );
  assert.equal(await stopProcess(server), 0);
  assert.ok(!server.stdout().includes(key));
});

test('PETSTORE_API_KEYS: key:pets:read restricts a key; an unknown scope or an empty one stops the start naming the scopes there are', async (t) => {
  const dir = await tempDirFor(t, 'petstore-scopes-');
  const server = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: `${FULL}, ${READ}:pets:read` });
  assertForbidden(
    await request(server.url, 'POST', '/v1/pets', {
      auth: READ,
      headers: JSON_HEADERS,
      body: '{"name":"x","categoryId":1}',
    }),
    'pets:write',
    'env key',
  );
  assert.equal(
    (
      await request(server.url, 'POST', '/v1/pets', {
        auth: FULL,
        headers: JSON_HEADERS,
        body: '{"name":"x","categoryId":1}',
      })
    ).status,
    201,
  );
  assert.equal(await stopProcess(server), 0);

  for (const [keys, message] of [
    [
      `${FULL},${READ}:pets:raed`,
      'PETSTORE_API_KEYS, key 2: unknown scope "pets:raed"; the scopes are pets:read, pets:write',
    ],
    [`${READ}:`, 'PETSTORE_API_KEYS, key 1: unknown scope ""; the scopes are pets:read, pets:write'],
    [
      `${READ}:pets:read+pets:delete`,
      'PETSTORE_API_KEYS, key 1: unknown scope "pets:delete"; the scopes are pets:read, pets:write',
    ],
    [
      'user@host:pets:read',
      'PETSTORE_API_KEYS, key 1: an API key must be a bearer token: letters, digits and - . _ ~ + / only, = at the end',
    ],
  ] as const) {
    const run = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: keys });
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr, `cannot start: ${message}\nRun with --help to see every option.\n`);
  }
});

test('several scopes after the colon are joined by +: key:pets:read+pets:write holds both', async (t) => {
  const server = await startServer({ keys: [`${READ}:pets:read+pets:write`] });
  t.after(() => server.close());
  assert.equal(
    (
      await server.request('POST', '/v1/pets', {
        auth: READ,
        headers: JSON_HEADERS,
        body: '{"name":"x","categoryId":1}',
      })
    ).status,
    201,
  );
  assert.equal((await server.request('GET', '/v1/pets/1', { auth: READ })).status, 200);
  await assert.rejects(
    startServer({ keys: [`${READ}:pets:write,`], dataDir: await tempDirFor(t, 'petstore-scopes-') }),
    { name: 'TypeError', message: 'unknown scope "pets:write,"; the scopes are pets:read, pets:write' },
  );
});
