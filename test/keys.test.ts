/**
 * `keys create | list | revoke` against a data directory, and their effect on a server that is
 * already running on it: no restart is needed for a new key to work or a revoked one to stop.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { updateKeyFile } from '#dist/auth/key-file.js';
import { request, runCli, spawnServerFor, tempDirFor } from './support.js';
import { TestFileSystem } from './store-support.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

// A revoked or created key takes effect on a running server within this time.
const RELOAD_BOUND_MS = 1500;

const temp = (t: TestContext): Promise<string> => tempDirFor(t, 'petstore-keys-');

const serve = spawnServerFor;

interface CreatedKey {
  key: string;
  id: string;
  stdout: string;
}

/** `keys create --label <label>`: the key is the one printed line that is a bare token; the id is the one `keys list` shows for the label. */
async function createKey(dir: string, label: string): Promise<CreatedKey> {
  const created = await runCli(['keys', 'create', '--label', label, '--data-dir', dir]);
  assert.equal(created.code, 0, created.stderr);
  const tokens = created.stdout
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^[A-Za-z0-9\-._~+/]{20,}=*$/.test(l));
  assert.equal(tokens.length, 1, `exactly one key is printed:\n${created.stdout}`);
  const key = tokens[0] as string;
  const listed = await runCli(['keys', 'list', '--data-dir', dir]);
  const row = listed.stdout.split('\n').find((l) => l.includes(label));
  assert.ok(row, `keys list shows the label "${label}":\n${listed.stdout}`);
  const id = row.trim().split(/\s+/)[0] as string;
  assert.ok(created.stdout.includes(id), `keys create prints the id ${id}`);
  return { key, id, stdout: created.stdout };
}

/** Polls with `key` until the status is `wanted`; returns how long that took. */
async function untilStatus(url: string, key: string, wanted: number, boundMs: number): Promise<number> {
  const started = Date.now();
  let status = 0;
  while (Date.now() - started <= boundMs) {
    status = (await request(url, 'GET', '/v1/pets', { auth: key })).status;
    if (status === wanted) return Date.now() - started;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail(`still ${status} instead of ${wanted} after ${boundMs} ms`);
}

test('keys create prints a new key once, with its id and label', async (t) => {
  const dir = await temp(t);
  const { key, id, stdout } = await createKey(dir, 'ci deploy');
  assert.equal(stdout.split(key).length - 1, 1, 'the key is printed exactly once');
  assert.match(stdout, /ci deploy/);
  assert.ok(key.length >= 32, 'the key is long enough to resist guessing');
  const other = await createKey(dir, 'laptop');
  assert.notEqual(other.key, key);
  assert.notEqual(other.id, id);
});

test('keys created at the same time are all kept', async (t) => {
  const dir = await temp(t);
  const labels = Array.from({ length: 12 }, (_, i) => `parallel-${i}`);
  const results = await Promise.all(
    labels.map((label) => runCli(['keys', 'create', '--label', label, '--data-dir', dir])),
  );
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  const { stdout } = await runCli(['keys', 'list', '--data-dir', dir]);
  const missing = labels.filter((label) => !stdout.includes(label));
  assert.deepEqual(missing, [], 'every key that was printed as created is in the key file');
});

test('keys list shows id, label and creation time, never a key or its hash', async (t) => {
  const dir = await temp(t);
  const before = Date.now();
  const a = await createKey(dir, 'first label');
  const b = await createKey(dir, 'second label');
  const { code, stdout, stderr } = await runCli(['keys', 'list', '--data-dir', dir]);
  assert.equal(code, 0, stderr);
  assert.equal(stdout.split('\n')[0], 'id  created  scopes  quota  label', 'a header row names the columns');
  for (const [created, label] of [
    [a, 'first label'],
    [b, 'second label'],
  ] as const) {
    const row = stdout.split('\n').find((l) => l.includes(created.id));
    assert.ok(row, `a row for ${created.id}`);
    assert.ok(row.includes(label));
    const time = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z/.exec(row);
    assert.ok(time, `the row shows when the key was created: ${row}`);
    const ms = Date.parse(time[0]);
    assert.ok(ms >= before - 1000 && ms <= Date.now() + 1000, `creation time ${time[0]} is now`);
    assert.ok(!stdout.includes(created.key), 'the key is not listed');
    assert.ok(!stdout.includes(sha256(created.key)), 'the hash is not listed');
  }
});

test('the key file stores only SHA-256 hashes of the keys', async (t) => {
  const dir = await temp(t);
  const a = await createKey(dir, 'one');
  const b = await createKey(dir, 'two');
  const text = await readFile(join(dir, 'keys.json'), 'utf8');
  assert.ok(!text.includes(a.key) && !text.includes(b.key), 'no key in the key file');
  const document = JSON.parse(text) as { keys: Array<Record<string, unknown>> };
  const hexes = text.match(/[0-9a-f]{64}/g) ?? [];
  assert.deepEqual(new Set(hexes), new Set([sha256(a.key), sha256(b.key)]));
  for (const entry of document.keys) {
    assert.match(String(entry.sha256), /^[0-9a-f]{64}$/);
    for (const value of Object.values(entry)) assert.ok(value !== a.key && value !== b.key);
  }
  // Nothing else in the directory holds a key either.
  for (const name of await readdir(dir)) {
    const content = await readFile(join(dir, name), 'utf8');
    assert.ok(!content.includes(a.key) && !content.includes(b.key), `${name} holds no key`);
  }
});

test('the key file is readable by its owner only (0600), also with umask 000', async (t) => {
  const dir = await temp(t);
  const previous = process.umask(0);
  try {
    await createKey(dir, 'private');
  } finally {
    process.umask(previous);
  }
  assert.equal((await stat(join(dir, 'keys.json'))).mode & 0o777, 0o600);
});

test("the key file is replaced durably: temp file written, fdatasync'ed, closed, renamed, then the directory synced", async (t) => {
  const dir = await temp(t);
  const fs = new TestFileSystem();
  const path = join(dir, 'keys.json');
  const record = { id: 'k1', label: 'one', created: new Date(0).toISOString(), sha256: sha256('key') };
  await updateKeyFile(path, () => ({ keys: [record], result: undefined }), fs);
  const steps = fs.done.map(
    (c) =>
      `${c.op} ${c.path === dir ? '<dir>' : c.path.replace(/\.keys\.json\.[0-9a-f]{12}\.tmp$/, '<temp>').replace(`${dir}/`, '')}`,
  );
  assert.deepEqual(steps, [
    'open <temp>',
    'write <temp>',
    'datasync <temp>',
    'close <temp>',
    'rename <temp>',
    'syncDir <dir>',
  ]);
  assert.deepEqual(JSON.parse(await readFile(path, 'utf8')), { format: 'petstore-keys/2', keys: [record] });
  assert.deepEqual((await readdir(dir)).sort(), ['keys.json'], 'no temp file and no lock left');
});

test('keys revoke with an unknown id exits non-zero and changes nothing', async (t) => {
  const dir = await temp(t);
  const a = await createKey(dir, 'keep me');
  const before = await readFile(join(dir, 'keys.json'), 'utf8');
  const { code, stderr } = await runCli(['keys', 'revoke', 'no-such-id', '--data-dir', dir]);
  assert.equal(code, 1, 'not found, not a usage error (2)');
  assert.match(stderr, /no-such-id/);
  assert.equal(await readFile(join(dir, 'keys.json'), 'utf8'), before);
  assert.ok((await runCli(['keys', 'list', '--data-dir', dir])).stdout.includes(a.id));
});

test('keys revoke in a directory without a key file exits 1 saying so, and creates nothing', async (t) => {
  const dir = join(await temp(t), 'absent');
  const { code, stderr } = await runCli(['keys', 'revoke', 'abc', '--data-dir', dir]);
  assert.equal(code, 1);
  assert.match(stderr, /^keys revoke failed: no key with id abc in .*keys\.json\n$/);
  await assert.rejects(readdir(dir), { code: 'ENOENT' });
});

test('a label with a control character is refused: keys list shows one key per line', async (t) => {
  const dir = await temp(t);
  for (const label of ['two\nlines', 'tab\there', 'bell\u0007']) {
    const { code, stderr } = await runCli(['keys', 'create', '--label', label, '--data-dir', dir]);
    assert.equal(code, 2, label);
    assert.match(stderr, /--label must not hold control characters/);
  }
  await assert.rejects(readFile(join(dir, 'keys.json')), { code: 'ENOENT' }, 'no key was made');
});

test('keys revoke removes the key from the list', async (t) => {
  const dir = await temp(t);
  const a = await createKey(dir, 'goes');
  const b = await createKey(dir, 'stays');
  const revoked = await runCli(['keys', 'revoke', a.id, '--data-dir', dir]);
  assert.equal(revoked.code, 0, revoked.stderr);
  const { stdout } = await runCli(['keys', 'list', '--data-dir', dir]);
  assert.ok(!stdout.includes(a.id));
  assert.ok(stdout.includes(b.id));
  assert.ok(!(await readFile(join(dir, 'keys.json'), 'utf8')).includes(sha256(a.key)));
});

test('a revoked key stops working on the running server without a restart', async (t) => {
  const dir = await temp(t);
  const a = await createKey(dir, 'to revoke');
  const b = await createKey(dir, 'to keep');
  const server = await serve(t, ['--data-dir', dir]);
  assert.doesNotMatch(server.stderr(), /generated/i, 'a key file with keys counts as configured');
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: a.key })).status, 200);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: b.key })).status, 200);

  const revoked = await runCli(['keys', 'revoke', a.id, '--data-dir', dir]);
  assert.equal(revoked.code, 0, revoked.stderr);
  await untilStatus(server.url, a.key, 401, RELOAD_BOUND_MS);
  assert.equal(
    (await request(server.url, 'GET', '/v1/pets', { auth: b.key })).status,
    200,
    'the other key still works',
  );
  assert.equal(server.child.exitCode, null, 'the server was not restarted');
});

test('a key created while the server runs works without a restart, beside PETSTORE_API_KEYS', async (t) => {
  const dir = await temp(t);
  const envKey = 'env-key-for-keys-test-0123456789';
  const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: envKey });
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: envKey })).status, 200);

  const created = await createKey(dir, 'added live');
  await untilStatus(server.url, created.key, 200, RELOAD_BOUND_MS);
  assert.equal(
    (await request(server.url, 'GET', '/v1/pets', { auth: envKey })).status,
    200,
    'the environment key still works',
  );

  const revoked = await runCli(['keys', 'revoke', created.id, '--data-dir', dir]);
  assert.equal(revoked.code, 0, revoked.stderr);
  await untilStatus(server.url, created.key, 401, RELOAD_BOUND_MS);
  assert.equal(
    (await request(server.url, 'GET', '/v1/pets', { auth: envKey })).status,
    200,
    'revoking a file key leaves the environment key in force',
  );
});

test('keys from the key file and from PETSTORE_API_KEYS work side by side from the start', async (t) => {
  const dir = await temp(t);
  const fileKey = await createKey(dir, 'file key');
  const envKey = 'env-key-side-by-side-0123456789';
  const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: envKey });
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: fileKey.key })).status, 200);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: envKey })).status, 200);
  assert.equal(
    (await request(server.url, 'GET', '/v1/pets', { auth: sha256(fileKey.key) })).status,
    401,
    'the stored hash is not a key',
  );
});

test("keys create --scope takes scopes repeated or comma-separated; keys list shows each key's scopes and own rate limit", async (t) => {
  const dir = await temp(t);
  for (const [label, args] of [
    ['reader', ['--scope', 'pets:read']],
    ['writer', ['--scope', 'pets:write']],
    ['both repeated', ['--scope', 'pets:write', '--scope', 'pets:read']],
    ['both listed', ['--scope', 'pets:read,pets:write', '--rate-limit', '60/60']],
    ['default', []],
  ] as const) {
    const created = await runCli(['keys', 'create', '--label', label, ...args, '--data-dir', dir]);
    assert.equal(created.code, 0, created.stderr);
  }
  const { stdout } = await runCli(['keys', 'list', '--data-dir', dir]);
  const rows = stdout
    .trim()
    .split('\n')
    .map((row) => row.split('  ').slice(2).join('  '));
  assert.deepEqual(rows, [
    'scopes  quota  label',
    'pets:read  default  reader',
    'pets:write  default  writer',
    'pets:read,pets:write  default  both repeated',
    'pets:read,pets:write  60/60  both listed',
    'pets:read,pets:write  default  default',
  ]);
  const stored = (
    JSON.parse(await readFile(join(dir, 'keys.json'), 'utf8')) as { keys: Array<{ scopes: string[] }> }
  ).keys.map((k) => k.scopes);
  assert.deepEqual(
    stored,
    [
      ['pets:read'],
      ['pets:write'],
      ['pets:read', 'pets:write'],
      ['pets:read', 'pets:write'],
      ['pets:read', 'pets:write'],
    ],
    'the scopes are written out, in one order',
  );
});

test('keys create with an unknown scope exits 2 naming the scopes there are, and makes no key', async (t) => {
  const dir = await temp(t);
  for (const scope of ['pets:delete', 'pets:read,', 'PETS:READ', '*']) {
    const { code, stderr } = await runCli(['keys', 'create', '--scope', scope, '--data-dir', dir]);
    assert.equal(code, 2, scope);
    const name = scope === 'pets:read,' ? '' : scope;
    assert.equal(
      stderr.split('\n')[0],
      `keys create failed: --scope: unknown scope ${JSON.stringify(name)}; the scopes are pets:read, pets:write`,
    );
  }
  const misplaced = await runCli(['keys', 'list', '--scope', 'pets:read', '--data-dir', dir]);
  assert.equal(misplaced.code, 2);
  assert.match(misplaced.stderr, /--scope applies only to "keys create"/);
  await assert.rejects(readFile(join(dir, 'keys.json')), { code: 'ENOENT' }, 'no key was made');
});

test('a key file with an unknown scope, no scope or a bad rate limit refuses the start, naming the key', async (t) => {
  const dir = await temp(t);
  const path = join(dir, 'keys.json');
  const base = {
    id: 'k1',
    label: 'edited',
    created: '2026-01-01T00:00:00.000Z',
    sha256: sha256('some-key-0123456789'),
  };
  for (const [change, message] of [
    [{ scopes: ['pets:raed'] }, 'key k1: unknown scope "pets:raed"; the scopes are pets:read, pets:write'],
    [
      { scopes: [] },
      'key k1: an empty list of scopes; name at least one (the scopes are pets:read, pets:write), or none at all for every scope',
    ],
    [
      { rateLimit: { requests: 0, seconds: 60 } },
      "key k1: a rate limit's requests must be an integer from 1 to 1000000000, got 0",
    ],
  ] as const) {
    await writeFile(path, JSON.stringify({ format: 'petstore-keys/2', keys: [{ ...base, ...change }] }), {
      mode: 0o600,
    });
    const run = await runCli(['--port', '0', '--data-dir', dir]);
    assert.equal(run.code, 1, run.stderr);
    assert.equal(run.stderr.split('\n')[0], `cannot start: ${path}: ${message}; correct it by hand, or revoke the key`);
  }
});

test('--label belongs to keys create (and webhooks add): keys list, keys revoke and a start refuse it, exit 2, changing nothing', async (t) => {
  const dir = await temp(t);
  const { id } = await createKey(dir, 'ci');
  const before = await readFile(join(dir, 'keys.json'), 'utf8');
  const refused: Array<[string[], string]> = [
    [['keys', 'list'], 'keys list failed'],
    [['keys', 'revoke', id], 'keys revoke failed'],
    [['--port', '0'], 'cannot start'],
  ];
  for (const [args, what] of refused) {
    const run = await runCli([...args, '--label', 'other', '--data-dir', dir], {}, 10_000);
    assert.equal(run.code, 2, `${what}: ${run.stdout}${run.stderr}`);
    assert.equal(run.stdout, '');
    assert.equal(
      run.stderr,
      `${what}: --label applies only to "keys create" and "webhooks add"\nRun with --help to see every option.\n`,
    );
  }
  assert.equal(await readFile(join(dir, 'keys.json'), 'utf8'), before, 'the key is not revoked, nor relabelled');
  const relabelled = await runCli(['keys', 'create', '--label', 'other', '--data-dir', dir]);
  assert.equal(relabelled.code, 0, relabelled.stderr);
  assert.match(relabelled.stdout, /^created key [0-9a-f]{8} \(other\); /);
});
