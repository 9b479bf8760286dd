/**
 * The same API key in two places (PETSTORE_API_KEYS or createPetstore's keys, keys.json, the
 * database), or twice in one: refused at start naming the key's ids and both places; found in a
 * changed key file or database read while running, the stricter entry is kept and it is logged, and
 * a revocation of its copy ends the key given directly too.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { Keyring } from '#dist/auth/keyring.js';
import { runCli, startServer, tempDir, tempDirFor, TEST_KEY, type TestServer } from './support.js';
import { createPetstore, silentLoggerForTests, type Logger } from './package.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');
const RELOAD_BOUND_MS = 1500;
const KEY = 'duplicate-key-0123456789abcdef';
const OTHER = 'other-key-0123456789abcdef';
const PET = JSON.stringify({ name: 'Rex', categoryId: 1 });
const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

interface Record_ {
  id: string;
  key: string;
  scopes?: string[];
  rateLimit?: { requests: number; seconds: number };
}

/** Writes keys.json whole, as `keys create` and `keys revoke` do (a new file renamed over the old). */
async function writeKeys(dir: string, keys: Record_[]): Promise<string> {
  const records = keys.map(({ id, key, ...rest }) => ({
    id,
    label: id,
    created: '2026-01-01T00:00:00.000Z',
    sha256: sha256(key),
    ...rest,
  }));
  const path = join(dir, 'keys.json');
  await writeFile(`${path}.tmp`, JSON.stringify({ format: 'petstore-keys/2', keys: records }), { mode: 0o600 });
  await rename(`${path}.tmp`, path);
  return path;
}

/** A logger that keeps its warnings: message and fields. */
function warnings(): { logger: Logger; lines: Array<{ message: string; fields: Record<string, unknown> }> } {
  const lines: Array<{ message: string; fields: Record<string, unknown> }> = [];
  return {
    lines,
    logger: {
      request() {},
      info() {},
      error: (message, _error, fields) => lines.push({ message, fields: { ...fields } }),
    },
  };
}

/** Polls `check` every 100 ms until it is true; fails after the reload bound. */
async function waitFor(check: () => Promise<boolean>): Promise<void> {
  const started = performance.now();
  while (performance.now() - started <= RELOAD_BOUND_MS) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`not within ${RELOAD_BOUND_MS} ms`);
}

async function untilStatus(server: TestServer, method: string, key: string, wanted: number): Promise<void> {
  const started = performance.now();
  let status = 0;
  while (performance.now() - started <= RELOAD_BOUND_MS) {
    status = (
      await server.request(method, '/v1/pets', {
        auth: key,
        ...(method === 'POST' ? { body: PET, headers: JSON_HEADERS } : {}),
      })
    ).status;
    if (status === wanted) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`${method} still ${status} instead of ${wanted} after ${RELOAD_BOUND_MS} ms`);
}

test('a key both in PETSTORE_API_KEYS and in keys.json refuses the start (exit 1), naming its ids and both places', async (t) => {
  const dir = await tempDirFor(t, 'petstore-dup-');
  const path = await writeKeys(dir, [
    { id: 'k1', key: OTHER },
    { id: 'k2', key: KEY, scopes: ['pets:read'] },
  ]);
  const run = await runCli(['--port', '0', '--data-dir', dir], {
    PETSTORE_API_KEYS: `unrelated-key-0123456789,${KEY}`,
  });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(
    run.stderr.split('\n')[0],
    `cannot start: the API key env-2 (key 2 of PETSTORE_API_KEYS, or of createPetstore's keys) is also k2 in ${path}; give each key once: remove one of the two`,
  );
  assert.doesNotMatch(run.stdout, /listening/);
});

test('the same key twice in PETSTORE_API_KEYS, whatever its scopes, exits 2 naming both', async (t) => {
  const dir = await tempDirFor(t, 'petstore-dup-');
  const run = await runCli(['--port', '0', '--data-dir', dir], {
    PETSTORE_API_KEYS: `${OTHER},${KEY},${KEY}:pets:read`,
  });
  assert.equal(run.code, 2, run.stderr);
  assert.equal(
    run.stderr.split('\n')[0],
    'cannot start: PETSTORE_API_KEYS, keys 2 and 3: the same key twice (env-2, env-3); give each key once, with the scopes it should hold',
  );
});

test('one key in two records of keys.json refuses the start, naming both ids', async (t) => {
  const dir = await tempDirFor(t, 'petstore-dup-');
  const path = await writeKeys(dir, [
    { id: 'k1', key: KEY },
    { id: 'k2', key: OTHER },
    { id: 'k3', key: KEY, scopes: ['pets:read'] },
  ]);
  const run = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(run.code, 1, run.stderr);
  assert.equal(
    run.stderr.split('\n')[0],
    `cannot start: the API key k1 in ${path} is also k3 in ${path}; give each key once: remove one of the two`,
  );
});

test("createPetstore refuses a key given twice in keys, or also in the data directory's keys.json", async (t) => {
  const dir = await tempDirFor(t, 'petstore-dup-');
  await assert.rejects(
    createPetstore({ dataDir: dir, keys: [KEY, `${KEY}:pets:read`], logger: silentLoggerForTests }),
    {
      name: 'DuplicateKeyError',
      message:
        "the API key env-1 (key 1 of PETSTORE_API_KEYS, or of createPetstore's keys) is also env-2 (key 2 of PETSTORE_API_KEYS, or of createPetstore's keys); give each key once: remove one of the two",
    },
  );
  await writeKeys(dir, [{ id: 'k1', key: KEY }]);
  await assert.rejects(createPetstore({ dataDir: dir, keys: [KEY], logger: silentLoggerForTests }), {
    name: 'DuplicateKeyError',
    message: /env-1 .* is also k1 in /,
  });
});

test('a running server that finds a key given directly in a changed keys.json keeps the stricter entry, logs it, and a revocation of the copy ends the key', async (t) => {
  const { logger, lines } = warnings();
  const server = await startServer({ keys: [TEST_KEY, OTHER], logger });
  t.after(() => server.close());
  const dir = server.dataDir;
  assert.equal(
    (await server.request('POST', '/v1/pets', { auth: TEST_KEY, body: PET, headers: JSON_HEADERS })).status,
    201,
  );

  // The file's copy holds only pets:read, with a quota of its own: both hold, whichever place is looser.
  const path = await writeKeys(dir, [
    { id: 'k1', key: TEST_KEY, scopes: ['pets:read'], rateLimit: { requests: 1000, seconds: 60 } },
  ]);
  await untilStatus(server, 'POST', TEST_KEY, 403);
  const read = await server.request('GET', '/v1/pets', { auth: TEST_KEY });
  assert.equal(read.status, 200);
  assert.match(String(read.headers['ratelimit-policy']), /q=1000;w=60/, "the file's quota applies");
  assert.deepEqual(lines, [
    {
      message: 'API key given twice; the stricter entry is in force',
      fields: {
        keyId: 'k1',
        alsoKeyId: 'env-1',
        places: `env-1 (key 1 of PETSTORE_API_KEYS, or of createPetstore's keys); k1 in ${path}`,
        result: 'the scopes both hold, the lower quota; a revocation of either ends it; remove one of the two',
      },
    },
  ]);

  await writeKeys(dir, []);
  await untilStatus(server, 'GET', TEST_KEY, 401);
  assert.equal(lines.at(-1)?.message, 'API key given directly withdrawn: its copy was revoked');
  assert.equal(lines.at(-1)?.fields.keyId, 'env-1');
  assert.equal(
    (await server.request('POST', '/v1/pets', { auth: OTHER, body: PET, headers: JSON_HEADERS })).status,
    201,
    'the other key given directly is untouched',
  );
});

test('a running server that finds one key in two records of a changed keys.json keeps the scopes both hold and the lower quota', async (t) => {
  // Removed by server.close(), after the server is stopped.
  const dir = await tempDir('petstore-dup-');
  await writeKeys(dir, [{ id: 'k1', key: KEY, scopes: ['pets:read'], rateLimit: { requests: 100, seconds: 60 } }]);
  const { logger, lines } = warnings();
  const server = await startServer({ dataDir: dir, keys: [], logger });
  t.after(() => server.close());
  assert.equal((await server.request('GET', '/v1/pets', { auth: KEY })).status, 200);

  // The record found again holds more scopes and the higher rate (10/1 is 600 a minute): neither is taken.
  await writeKeys(dir, [
    { id: 'k1', key: KEY, scopes: ['pets:read'], rateLimit: { requests: 100, seconds: 60 } },
    { id: 'k2', key: KEY, rateLimit: { requests: 10, seconds: 1 } },
  ]);
  await waitFor(async () => {
    await server.request('GET', '/v1/pets', { auth: KEY });
    return lines.length > 0;
  });
  assert.deepEqual(
    lines.map((l) => [l.message, l.fields.keyId, l.fields.alsoKeyId]),
    [['API key given twice; the stricter entry is in force', 'k2', 'k1']],
  );
  const res = await server.request('POST', '/v1/pets', { auth: KEY, body: PET, headers: JSON_HEADERS });
  assert.equal(res.status, 403, 'pets:write is held by one record only');
  assert.match(String(res.headers['ratelimit-policy']), /q=100;w=60/);
});

test('database keys: a key given directly is refused at the first read, merged and logged later, and withdrawn when its copy is removed', () => {
  const seen: string[] = [];
  const keyring = new Keyring({
    keys: [KEY],
    onDuplicate: (message, fields) => seen.push(`${message}: ${fields.keyId}`),
  });
  const record = { id: 'db1', sha256: sha256(KEY), scopes: ['pets:read'] };
  assert.throws(() => keyring.setSharedKeys([record]), {
    name: 'DuplicateKeyError',
    message: /env-1 .* is also db1 in the database/,
  });
  assert.equal(keyring.identify(KEY)?.id, 'env-1', 'the refused read changed nothing');

  keyring.setSharedKeys([]);
  keyring.setSharedKeys([record, { id: 'db2', sha256: sha256(OTHER), rateLimit: { requests: 5, seconds: 60 } }]);
  assert.deepEqual(seen, ['API key given twice; the stricter entry is in force: db1']);
  const merged = keyring.identify(KEY);
  assert.equal(merged?.id, 'db1');
  assert.equal(merged?.scopes, 1, 'pets:read only');

  keyring.setSharedKeys([{ id: 'db2', sha256: sha256(OTHER) }]);
  assert.equal(keyring.identify(KEY), undefined, 'revoked in the database: the key given directly is withdrawn');
  assert.equal(seen.at(-1), 'API key given directly withdrawn: its copy was revoked: env-1');
  assert.equal(keyring.identify(OTHER)?.id, 'db2');
});
