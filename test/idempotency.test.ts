/**
 * `Idempotency-Key` on createPet, black-box over HTTP: a retried create never makes a second pet, a
 * reused key with another pet is refused, keys are scoped to the API key, and the key is as durable
 * as the pet (kill -9, snapshot, restart).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import {
  TEST_KEY,
  rawRequest,
  request,
  spawnServer,
  startServer,
  tempDir,
  tempDirFor,
  waitFor,
  type Response,
  type ServerProcess,
  type TestServer,
} from './support.js';
import { TestFileSystem, defer } from './store-support.js';

const OTHER_KEY = 'other-key-0123456789abcdef';
type Json = Record<string, unknown>;

async function serve(t: TestContext, options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const server = await startServer({ keys: [TEST_KEY, OTHER_KEY], ...options });
  t.after(() => server.close());
  return server;
}

function create(url: string, body: string, key?: string, auth: string = TEST_KEY): Promise<Response> {
  const headers: Array<[string, string]> = [['content-type', 'application/json']];
  if (key !== undefined) headers.push(['idempotency-key', key]);
  return request(url, 'POST', '/v1/pets', { headers, body, auth });
}

async function petCount(url: string): Promise<number> {
  return ((await request(url, 'GET', '/v1/pets?limit=100')).json as unknown[]).length;
}

test('a retry with the same key and the same pet gets the first 201 again, marked replayed, and stores nothing', async (t) => {
  const server = await serve(t);
  const first = await create(server.url, '{"name":"Rex","categoryId":7,"status":"sold"}', '"retry-1"');
  assert.equal(first.status, 201);
  assert.equal(first.headers['idempotent-replayed'], undefined, 'the first answer is not a replay');
  // Another field order and other spaces: the same pet.
  const again = await create(server.url, '{ "status": "sold", "categoryId": 7, "name": "Rex" }', '"retry-1"');
  assert.equal(again.status, 201);
  assert.equal(again.text, first.text);
  assert.equal(again.headers.location, first.headers.location);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(await petCount(server.url), 1);
});

test('a key sent bare is the same key as the same characters quoted', async (t) => {
  const server = await serve(t);
  const key = 'f47ac10b-58cc-4372-a567-0e02b2c3d479';
  const first = await create(server.url, '{"name":"Rex","categoryId":1}', key);
  const again = await create(server.url, '{"name":"Rex","categoryId":1}', `"${key}"`);
  assert.equal(again.headers['idempotent-replayed'], 'true');
  assert.equal(again.text, first.text);
});

test('the same key with another pet is a 422 idempotency_key_reused, and nothing is stored', async (t) => {
  const server = await serve(t);
  assert.equal((await create(server.url, '{"name":"Rex","categoryId":7}', 'k')).status, 201);
  for (const body of [
    '{"name":"Max","categoryId":7}',
    '{"name":"Rex","categoryId":8}',
    '{"name":"Rex","categoryId":7,"status":"sold"}',
  ]) {
    const res = await create(server.url, body, 'k');
    assert.equal(res.status, 422, body);
    assert.deepEqual(res.json, {
      code: 'idempotency_key_reused',
      message: 'this Idempotency-Key was already used for a different pet; use a new key for a new pet',
      status: 422,
    });
  }
  assert.equal(await petCount(server.url), 1);
});

test('the fingerprint keeps every digit: 9007199254740993 is not 9007199254740992', async (t) => {
  const server = await serve(t);
  const first = await create(server.url, '{"name":"Big","categoryId":9007199254740993}', 'big');
  assert.equal(first.status, 201);
  assert.equal((await create(server.url, '{"name":"Big","categoryId":9007199254740992}', 'big')).status, 422);
  const replay = await create(server.url, '{"name":"Big","categoryId":9007199254740993}', 'big');
  assert.equal(replay.headers['idempotent-replayed'], 'true');
  assert.match(replay.text, /"categoryId":9007199254740993/);
});

test('concurrent retries with one key make one pet: one 201, the rest replays or 409 request_in_progress', async (t) => {
  const server = await serve(t);
  const results = await Promise.all(
    Array.from({ length: 20 }, () => create(server.url, '{"name":"Once","categoryId":1}', 'same')),
  );
  const created = results.filter((r) => r.status === 201 && r.headers['idempotent-replayed'] === undefined);
  assert.equal(created.length, 1, results.map((r) => r.status).join(','));
  for (const r of results) {
    if (r.status === 409) {
      assert.equal((r.json as Json).code, 'request_in_progress');
      assert.equal(r.headers['retry-after'], '1');
    } else {
      assert.equal(r.status, 201);
      assert.equal(r.text, created[0]?.text);
    }
  }
  assert.equal(await petCount(server.url), 1);
  // Once committed, a late retry is a replay.
  assert.equal(
    (await create(server.url, '{"name":"Once","categoryId":1}', 'same')).headers['idempotent-replayed'],
    'true',
  );
});

test('keys are scoped to the API key: another client with the same key makes its own pet, and cannot be blocked', async (t) => {
  const server = await serve(t);
  const mine = await create(server.url, '{"name":"Mine","categoryId":1}', 'shared', TEST_KEY);
  const theirs = await create(server.url, '{"name":"Theirs","categoryId":2}', 'shared', OTHER_KEY);
  assert.equal(mine.status, 201);
  assert.equal(theirs.status, 201, 'not a 422: the other client never used this key');
  assert.equal(theirs.headers['idempotent-replayed'], undefined);
  assert.notEqual((theirs.json as Json).id, (mine.json as Json).id);
});

test('malformed keys, or the header twice, are a 400 naming the header; valid edge forms are accepted', async (t) => {
  const server = await serve(t);
  const bad = [
    '""',
    'a'.repeat(256),
    `"${'a'.repeat(256)}"`,
    '"unterminated',
    '"a"b"',
    '"tab\there"',
    'bare space',
    '"\\n"',
    '"ü"',
  ];
  for (const key of bad) {
    const raw = await rawRequest(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
        `Content-Type: application/json\r\nIdempotency-Key: ${key}\r\nContent-Length: 29\r\nConnection: close\r\n\r\n{"name":"Rex","categoryId":1}`,
    );
    assert.match(raw, /^HTTP\/1\.1 400 /, key);
    assert.match(raw, /"message":"the Idempotency-Key header /, key);
  }
  const twice = await request(server.url, 'POST', '/v1/pets', {
    headers: [
      ['content-type', 'application/json'],
      ['idempotency-key', 'a'],
      ['idempotency-key', 'a'],
    ],
    body: '{"name":"Rex","categoryId":1}',
  });
  assert.equal(twice.status, 400);
  assert.equal((twice.json as Json).message, 'the Idempotency-Key header is given more than once');
  for (const key of [
    'a'.repeat(255),
    `"${'b'.repeat(255)}"`,
    '"with space"',
    '"quote \\" and \\\\ backslash"',
    "!#$%&'*+-.^_`|~",
  ]) {
    assert.equal((await create(server.url, '{"name":"Rex","categoryId":1}', key)).status, 201, key);
  }
  assert.equal(await petCount(server.url), 5, 'nothing was stored by the refused requests');
});

test('only a 201 is remembered: after a 400 the key may be used again for a corrected request', async (t) => {
  const server = await serve(t);
  assert.equal((await create(server.url, '{"name":"","categoryId":1}', 'fix-me')).status, 400);
  const fixed = await create(server.url, '{"name":"Fixed","categoryId":1}', 'fix-me');
  assert.equal(fixed.status, 201);
  assert.equal(fixed.headers['idempotent-replayed'], undefined);
});

test('after a 503 the same key may be used again, and the retry creates the pet once', async (t) => {
  const dir = await tempDir(); // removed by server.close(), after the store has closed
  const fs = new TestFileSystem();
  let failing = true;
  fs.hook = (call) => (failing && call.op === 'datasync' && call.path.endsWith('.jsonl') ? { code: 'EIO' } : undefined);
  const server = await serve(t, { dataDir: dir, store: await FileStore.open(dir, { fileSystem: fs }) });
  assert.equal((await create(server.url, '{"name":"Later","categoryId":1}', 'after-503')).status, 503);
  failing = false;
  const retried = await create(server.url, '{"name":"Later","categoryId":1}', 'after-503');
  assert.equal(retried.status, 201);
  assert.equal(retried.headers['idempotent-replayed'], undefined);
  assert.equal(
    (await create(server.url, '{"name":"Later","categoryId":1}', 'after-503')).headers['idempotent-replayed'],
    'true',
  );
  assert.equal(await petCount(server.url), 1);
});

test('a key is forgotten after its window: the same request then creates a new pet', async (t) => {
  const server = await serve(t, { idempotencyWindow: 1 });
  const first = await create(server.url, '{"name":"Rex","categoryId":1}', 'short');
  assert.equal(
    (await create(server.url, '{"name":"Rex","categoryId":1}', 'short')).headers['idempotent-replayed'],
    'true',
  );
  await new Promise((r) => setTimeout(r, 1100));
  const later = await create(server.url, '{"name":"Rex","categoryId":1}', 'short');
  assert.equal(later.status, 201);
  assert.equal(later.headers['idempotent-replayed'], undefined);
  assert.notEqual((later.json as Json).id, (first.json as Json).id);
});

test('an API key may have so many keys remembered: past that a new key is a 429 with Retry-After, while replays, other API keys and creates without a key go on', async (t) => {
  const server = await spawn(t, await tempDirFor(t), ['--idempotency-key-limit', '2', '--idempotency-window', '600'], {
    PETSTORE_API_KEYS: `${TEST_KEY},${OTHER_KEY}`,
  });
  assert.equal((await create(server.url, '{"name":"A","categoryId":1}', 'one')).status, 201);
  assert.equal((await create(server.url, '{"name":"B","categoryId":2}', 'two')).status, 201);
  const refused = await create(server.url, '{"name":"C","categoryId":3}', 'three');
  assert.equal(refused.status, 429);
  assert.deepEqual(refused.json, {
    code: 'too_many_idempotency_keys',
    status: 429,
    message: `this API key has 2 Idempotency-Keys remembered, the most this server keeps for one API key within its window; retry after ${refused.headers['retry-after']} s, or create without an Idempotency-Key`,
  });
  const wait = Number(refused.headers['retry-after']);
  assert.ok(wait > 590 && wait <= 600, `Retry-After ${wait}: until the oldest key leaves the 600 s window`);
  assert.equal(
    (await create(server.url, '{"name":"A","categoryId":1}', 'one')).headers['idempotent-replayed'],
    'true',
    'a replay needs no new key',
  );
  assert.equal(
    (await create(server.url, '{"name":"C","categoryId":3}', 'three', OTHER_KEY)).status,
    201,
    'another API key is not held up',
  );
  assert.equal(
    (await create(server.url, '{"name":"C","categoryId":3}')).status,
    201,
    'a create without a key is not held up',
  );
  assert.equal(await petCount(server.url), 4, 'the refused create stored nothing');
});

test('creates with a key still being committed count against the bound: past it, a new key is a 429 at once, not let through', async (t) => {
  // The journal's fsync is held: three keyed creates are under way, none committed.
  const dir = await tempDir(); // removed by server.close(), after the store has closed
  const fs = new TestFileSystem();
  let release = (): void => {};
  const held = new Promise<undefined>((resolve) => {
    release = () => resolve(undefined);
  });
  fs.hook = (call) => (call.op === 'datasync' && call.path.endsWith('.jsonl') ? held : undefined);
  t.after(release); // before the server's close, which waits for the held commits
  const server = await serve(t, {
    dataDir: dir,
    store: await FileStore.open(dir, { fileSystem: fs, idempotencyKeyLimit: 3 }),
  });
  const settled: Response[] = [];
  const creates = ['a', 'b', 'c', 'd', 'e'].map((key, i) =>
    create(server.url, `{"name":"P${i}","categoryId":${i}}`, key).then((res) => {
      settled.push(res);
      return res;
    }),
  );
  // Two answers come while the other three are held; planting `count < max` lets all five through to the held fsync.
  await waitFor(() => settled.length >= 2, 2000, 'two answers');
  assert.deepEqual(
    settled.map((res) => [res.status, (res.json as Json).code, res.headers['retry-after']]),
    [
      [429, 'too_many_idempotency_keys', '1'],
      [429, 'too_many_idempotency_keys', '1'],
    ],
    'three keys under way hold the three places: the other two are refused, with a wait of a second',
  );
  release();
  const statuses = (await Promise.all(creates)).map((res) => res.status).sort();
  assert.deepEqual(statuses, [201, 201, 201, 429, 429]);
  assert.equal(await petCount(server.url), 3);
});

// --- Durable with the pet ------------------------------------------------------------------------

async function spawn(
  t: TestContext,
  dir: string,
  args: string[] = [],
  env = { PETSTORE_API_KEYS: TEST_KEY },
): Promise<ServerProcess> {
  const server = await spawnServer(['--data-dir', dir, ...args], env);
  defer(t, () => {
    if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    return server.exited;
  });
  return server;
}

test('a replay after kill -9, and after a graceful stop that compacts into a snapshot, answers exactly as before', async (t) => {
  const dir = await tempDirFor(t);
  let server = await spawn(t, dir);
  const first = await create(server.url, '{"name":"Durable","categoryId":-9223372036854775808}', '"keep me"');
  assert.equal(first.status, 201);
  server.child.kill('SIGKILL');
  await server.exited;

  server = await spawn(t, dir);
  const afterKill = await create(server.url, '{"name":"Durable","categoryId":-9223372036854775808}', '"keep me"');
  assert.equal(afterKill.headers['idempotent-replayed'], 'true', 'replayed from the journal');
  assert.equal(afterKill.text, first.text);
  assert.equal(afterKill.headers.location, first.headers.location);
  server.child.kill('SIGTERM');
  assert.equal(await server.exited, 0);

  server = await spawn(t, dir);
  const afterSnapshot = await create(server.url, '{"name":"Durable","categoryId":-9223372036854775808}', '"keep me"');
  assert.equal(afterSnapshot.headers['idempotent-replayed'], 'true', 'replayed from the snapshot');
  assert.equal(afterSnapshot.text, first.text);
  assert.equal((await create(server.url, '{"name":"Other","categoryId":1}', '"keep me"')).status, 422);
  assert.equal(await petCount(server.url), 1);
});

test('keys past their window are dropped at load: after a restart the same request creates a new pet', async (t) => {
  const dir = await tempDirFor(t);
  let server = await spawn(t, dir, ['--idempotency-window', '1']);
  assert.equal((await create(server.url, '{"name":"Old","categoryId":1}', 'old')).status, 201);
  server.child.kill('SIGKILL');
  await server.exited;
  await new Promise((r) => setTimeout(r, 1100));
  server = await spawn(t, dir, ['--idempotency-window', '1']);
  const again = await create(server.url, '{"name":"Old","categoryId":1}', 'old');
  assert.equal(again.status, 201);
  assert.equal(again.headers['idempotent-replayed'], undefined);
  assert.equal(await petCount(server.url), 2);
});

test("the data files keep a slow-hashed scope, never the API key's plain SHA-256, which a weak key could be guessed from", async (t) => {
  const dir = await tempDir(); // removed by server.close()
  const server = await serve(t, { dataDir: dir });
  assert.equal((await create(server.url, '{"name":"Rex","categoryId":1}', 'scoped')).status, 201);
  const journal = (await readdir(dir)).find((name) => name.endsWith('.jsonl')) as string;
  const line = await readFile(join(dir, journal), 'utf8');
  const scope = /"scope":"([^"]+)"/.exec(line)?.[1];
  assert.match(String(scope), /^[A-Za-z0-9_-]{22}$/);
  for (const encoding of ['hex', 'base64url'] as const)
    assert.ok(!line.includes(createHash('sha256').update(TEST_KEY).digest(encoding)), encoding);
});

// Bounded by its 5 rounds; the timeout only stops a hang on a busy machine.
test('kill -9 during keyed creates, round after round: retrying every key makes exactly one pet per key', {
  timeout: 180_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  /** Every key sent, with its body and the id of its 201, once one was received. */
  const sent = new Map<string, { body: string; id?: number }>();
  for (let round = 0; round < 5; round++) {
    const server = await spawn(t, dir);
    // First retry what the last kill cut off: each gets its pet exactly once.
    for (const [key, entry] of sent) {
      if (entry.id !== undefined) continue;
      const res = await create(server.url, entry.body, key);
      assert.equal(res.status, 201, res.text);
      entry.id = (res.json as { id: number }).id;
    }
    let acks = 0;
    let killed = false;
    const client = async (c: number): Promise<void> => {
      for (let n = 0; !killed; n++) {
        const key = `r${round}-c${c}-n${n}`;
        const body = JSON.stringify({ name: key, categoryId: n });
        sent.set(key, { body });
        let res: Response;
        try {
          res = await create(server.url, body, key);
        } catch (error) {
          if (killed) return;
          throw error;
        }
        assert.equal(res.status, 201, res.text);
        (sent.get(key) as { id?: number }).id = (res.json as { id: number }).id;
        if (++acks === 10 + round * 7) {
          killed = true;
          server.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, (_, c) => client(c)));
    await server.exited;
  }
  const last = await spawn(t, dir);
  for (const [key, entry] of sent) {
    const res = await create(last.url, entry.body, key);
    assert.equal(res.status, 201);
    if (entry.id !== undefined) {
      assert.equal(res.headers['idempotent-replayed'], 'true', `${key} was acknowledged and replays`);
      assert.equal((res.json as { id: number }).id, entry.id);
    }
  }
  // Every key's name appears exactly once among all pets.
  const names: string[] = [];
  for (let after = 0; ; ) {
    const page = await request(last.url, 'GET', `/v1/pets?limit=100&after=${after}`);
    const pets = page.json as Array<{ id: number; name: string }>;
    names.push(...pets.map((p) => p.name));
    if (page.headers.link === undefined) break;
    after = (pets.at(-1) as { id: number }).id;
  }
  assert.equal(names.length, sent.size, 'one pet per key, none missing, none doubled');
  assert.deepEqual(new Set(names), new Set(sent.keys()));
});
