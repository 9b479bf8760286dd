/**
 * The command line over a database: keys shared by every instance (a revoke reaches all of them
 * within two seconds), one generated key for instances starting together, `migrate` from a file
 * store, and the message when the `postgres` package is missing.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import {
  request,
  runCli,
  spawnServerFor,
  startServer,
  stopProcess,
  tempDirFor,
  TEST_KEY,
  waitFor,
} from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';
import { assertImmutable } from './immutable-pets.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
const REVOKE_BOUND_MS = 2000;

/** The one printed line that is a bare key. */
function printedKey(output: string): string {
  const keys = output
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^pet_[A-Za-z0-9_-]{20,}$/.test(l));
  assert.equal(keys.length, 1, `exactly one key is printed:\n${output}`);
  return keys[0] as string;
}

export function cliTests(cluster: () => Cluster): void {
  test('keys create, list and revoke act on the database; a revoke stops the key on every instance within 2 s', async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    // Before any server started: the command makes the schema itself.
    const created = await runCli(['keys', 'create', '--label', 'shared', '--database-url', url]);
    assert.equal(created.code, 0, created.stderr);
    const key = printedKey(created.stdout);
    const id = /created key (\S+) \(shared\)/.exec(created.stdout)?.[1] as string;
    const listed = await runCli(['keys', 'list'], { PETSTORE_DATABASE_URL: url });
    assert.match(listed.stdout, new RegExp(`^${id}  \\S+  pets:read,pets:write  default  shared$`, 'm'));
    const stored = await sql`SELECT sha256 FROM petstore.api_keys`;
    assert.equal(stored.length, 1);
    assert.ok(!JSON.stringify(stored).includes(key), 'only the hash is stored');

    const instances = await Promise.all([1, 2].map(() => spawnServerFor(t, ['--database-url', url])));
    for (const s of instances) assert.equal((await request(s.url, 'GET', '/v1/pets', { auth: key })).status, 200);
    const revoked = await runCli(['keys', 'revoke', id, '--database-url', url]);
    assert.equal(revoked.code, 0, revoked.stderr);
    const at = Date.now();
    const refused = new Set<number>();
    for (;;) {
      for (const [i, s] of instances.entries())
        if ((await request(s.url, 'GET', '/v1/pets', { auth: key })).status === 401) refused.add(i);
      if (refused.size === instances.length || Date.now() - at > REVOKE_BOUND_MS + 1000) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const took = Date.now() - at;
    assert.equal(refused.size, instances.length, 'both instances refuse the revoked key');
    assert.ok(took <= REVOKE_BOUND_MS, `the revoke took ${took} ms to reach every instance`);
    assert.equal(
      (await runCli(['keys', 'revoke', id, '--database-url', url])).code,
      1,
      'revoking an unknown id exits 1 (not found), as with the key file',
    );
  });

  test('instances starting together on a new database generate one key between them, and it works on all', async (t) => {
    const url = await cluster().createDatabase();
    const instances = await Promise.all([1, 2, 3].map(() => spawnServerFor(t, ['--database-url', url])));
    const printed = instances.filter((s) => s.stderr().includes('No API key was configured'));
    assert.equal(printed.length, 1, 'exactly one instance generated a key');
    const key = printedKey((printed[0] as { stderr: () => string }).stderr());
    assert.match((printed[0] as { stderr: () => string }).stderr(), /kept in the database/);
    for (const s of instances) assert.equal((await request(s.url, 'GET', '/v1/pets', { auth: key })).status, 200);
    // The next start finds the database's key and generates none.
    const later = await spawnServerFor(t, ['--database-url', url]);
    assert.ok(!later.stderr().includes('No API key was configured'));
  });

  test('migrate copies a file store into an empty database with its ids and keys, and refuses one that holds pets', async (t) => {
    const dir = await tempDirFor(t, 'petstore-migrate-');
    const files = await startServer({ dataDir: dir });
    const sent = [];
    for (let i = 0; i < 30; i++) {
      const res = await files.request('POST', '/v1/pets', {
        headers: JSON_HEADERS,
        body: `{"name":"m\\u0000${i}","categoryId":${9223372036854775000n + BigInt(i)}${i % 2 ? ',"status":"sold"' : ''}}`,
      });
      sent.push(res.text);
    }
    const fileList = (await files.request('GET', '/v1/pets?limit=100')).text;
    await files.stop();
    const created = await runCli(['keys', 'create', '--label', 'old', '--data-dir', dir]);
    const key = printedKey(created.stdout);

    const url = await cluster().createDatabase();
    const migrated = await runCli(['migrate', '--data-dir', dir, '--database-url', url]);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(migrated.stdout, /copied 30 pets \(last id 30\) and 1 of 1 API key from/);
    assert.match(migrated.stdout, /verified: the database holds 30 pets/);

    const server = await spawnServerFor(t, ['--database-url', url]);
    assert.equal(
      (await request(server.url, 'GET', '/v1/pets?limit=100', { auth: key })).text,
      fileList,
      'the same pets, ids and bytes; the old key works',
    );
    const next = await request(server.url, 'POST', '/v1/pets', {
      auth: key,
      headers: JSON_HEADERS,
      body: '{"name":"next","categoryId":1}',
    });
    assert.equal((next.json as { id: number }).id, 31);
    await assertImmutable(connect(t, url), 'm\u00000');

    const again = await runCli(['migrate', '--data-dir', dir, '--database-url', url]);
    assert.equal(again.code, 1);
    assert.match(again.stderr, /already holds pets \(last id 31\)/);
    const missing = await runCli(['migrate', '--data-dir', join(dir, 'nope'), '--database-url', url]);
    assert.equal(missing.code, 2);
  });

  test('migrate of a file store killed while it ran: new ids in the database start past the ids it had reserved', async (t) => {
    const dir = await tempDirFor(t, 'petstore-migrate-');
    const files = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
    for (let i = 0; i < 3; i++)
      assert.equal(
        (
          await request(files.url, 'POST', '/v1/pets', {
            auth: TEST_KEY,
            headers: JSON_HEADERS,
            body: '{"name":"m","categoryId":1}',
          })
        ).status,
        201,
      );
    files.child.kill('SIGKILL');
    await files.exited;
    const reserved = Number(
      /"reserved":(\d+),"stopped":false/.exec(await readFile(join(dir, 'pets-ids.json'), 'utf8'))?.[1],
    );
    assert.ok(reserved > 3);
    const url = await cluster().createDatabase();
    const migrated = await runCli(['migrate', '--data-dir', dir, '--database-url', url]);
    assert.equal(migrated.code, 0, migrated.stderr);
    assert.match(
      migrated.stdout,
      new RegExp(
        `copied 3 pets \\(last id ${reserved}\\) .*\nverified: the database holds 3 pets; new pets get ids from ${reserved + 1}\n$`,
      ),
    );
  });

  test('a key created or revoked in the database is logged by id by a running instance, never the key', async (t) => {
    const url = await cluster().createDatabase();
    const server = await spawnServerFor(t, ['--database-url', url], { PETSTORE_API_KEYS: TEST_KEY });
    const created = await runCli(['keys', 'create', '--database-url', url]);
    assert.equal(created.code, 0, created.stderr);
    const key = printedKey(created.stdout);
    const id = /created key (\S+);/.exec(created.stdout)?.[1] as string;
    const logged = (msg: string): boolean =>
      server
        .stdout()
        .split('\n')
        .some((line) => line.includes(`"msg":"${msg}","keyId":"${id}"`));
    // The instance reads the keys every second, requests or not.
    await waitFor(() => logged('API key added'), REVOKE_BOUND_MS + 1000, 'the added key is logged');
    assert.equal((await runCli(['keys', 'revoke', id, '--database-url', url])).code, 0);
    await waitFor(() => logged('API key revoked'), REVOKE_BOUND_MS + 1000, 'the revoked key is logged');
    assert.equal(await stopProcess(server), 0);
    assert.ok(!(server.stdout() + server.stderr()).includes(key), 'the key is never logged');
  });

  test('--database-url without the postgres package installed exits 1 naming the commands that add only the driver', async (t) => {
    // The built server alone, with no node_modules anywhere above it.
    const root = await tempDirFor(t, 'petstore-nopg-');
    const dist = resolve(__dirname, '../..');
    await cp(dist, join(root, 'dist'), { recursive: true, filter: (source) => !source.startsWith(join(dist, 'test')) });
    await writeFile(join(root, 'package.json'), '{"type":"commonjs"}\n');
    await mkdir(join(root, 'data'));
    const run = spawnSync(
      process.execPath,
      [join(root, 'dist/server.js'), '--port', '0', '--database-url', 'postgres://127.0.0.1:1/none'],
      {
        cwd: root,
        env: { PATH: process.env.PATH, PETSTORE_API_KEYS: TEST_KEY },
        encoding: 'utf8',
        timeout: 10_000,
      },
    );
    assert.equal(run.status, 1, run.stderr);
    assert.match(
      run.stderr,
      /^cannot start: --database-url needs the "postgres" package, which is not installed; add only it: npm install postgres@\^3\.4 in a project .*, or npm install --prefix dist --no-save --no-package-lock postgres@\^3\.4 in a production tree made from a clone/,
    );
  });
}
