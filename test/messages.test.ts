/**
 * What the command line says: failures that name the command that failed and what to do, a start
 * that fails after generating a key, warnings at their own level, key changes in the log, and the
 * name the program was started by in --help.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import {
  SERVER_JS,
  TEST_KEY,
  request,
  runCli,
  spawnQuietServerFor,
  spawnServerFor,
  stopProcess,
  tempDirFor,
} from './support.js';

const ROOT = resolve(__dirname, '../..');

test('--help names the program as it was started: the installed petstore command, or node and the path of server.js', async (t) => {
  // npm links an installed package's bin as node_modules/.bin/petstore -> ../petstore-api/dist/server.js.
  const bin = join(await tempDirFor(t), 'petstore');
  await symlink(SERVER_JS, bin);
  const installed = await runCli(['--help'], {}, 60_000, { serverJs: bin });
  assert.equal(installed.code, 0, installed.stderr);
  assert.match(installed.stdout, /^ {2}petstore \[options\]$/m);
  assert.match(
    installed.stdout,
    /^ {2}petstore keys create \[--label <text>\] \[--scope <scope>\]… \[--rate-limit <n>\/<s>\] \[--data-dir <dir>\]$/m,
  );
  assert.doesNotMatch(installed.stdout, /node |server\.js/);
  const fromClone = spawnSync(process.execPath, ['dist/server.js', '--help'], { cwd: ROOT, encoding: 'utf8' }).stdout;
  assert.match(fromClone, /^ {2}node dist\/server\.js \[options\]$/m);
});

/** A TCP server holding a port of 127.0.0.1, closed after the test. */
async function occupiedPort(t: { after(fn: () => unknown): void }): Promise<number> {
  const holder: Server = createServer();
  await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
  t.after(() => new Promise((r) => holder.close(r)));
  return (holder.address() as { port: number }).port;
}

test('a first start that fails (port in use) says why and shows no key: none is kept, and the next start that serves generates one and shows it', async (t) => {
  const dir = await tempDirFor(t);
  const port = await occupiedPort(t);
  const failed = await runCli(['--port', String(port), '--data-dir', dir]);
  assert.equal(failed.code, 1, failed.stderr);
  assert.equal(
    failed.stderr,
    `cannot start: 127.0.0.1:${port} is already in use by another process; stop that process, or choose another port with --port (0 takes any free one)\n` +
      'No API key is kept from this start: the next start that serves generates one and shows it.\n',
  );
  assert.doesNotMatch(failed.stdout + failed.stderr, /pet_/);
  assert.doesNotMatch(failed.stdout, /listening/);

  const server = await spawnServerFor(t, ['--data-dir', dir]);
  const key = /^ {2}(pet_[A-Za-z0-9_-]+)$/m.exec(server.stderr())?.[1];
  assert.ok(key !== undefined, server.stderr());
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
  assert.equal(await stopProcess(server), 0);
});

test('keys created and revoked while the server runs are logged by id when it picks them up, never the key', async (t) => {
  const dir = await tempDirFor(t);
  const server = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: TEST_KEY });
  const created = await runCli(['keys', 'create', '--data-dir', dir]);
  assert.equal(created.code, 0, created.stderr);
  const id = /^created key (\S+);/.exec(created.stdout)?.[1] as string;
  const key = created.stdout.split('\n')[1] as string;
  const logged = (msg: string): boolean =>
    server
      .stdout()
      .split('\n')
      .some((line) => line.includes(`"msg":"${msg}"`) && line.includes(`"keyId":"${id}"`));
  // The key file is looked at when a request comes, at most once a second: ask until the line is there.
  const untilLogged = async (msg: string): Promise<void> => {
    const deadline = Date.now() + 5000;
    while (!logged(msg)) {
      assert.ok(Date.now() < deadline, `"${msg}" is logged for ${id} within 5 s:\n${server.stdout()}`);
      await request(server.url, 'GET', '/v1/pets', { auth: TEST_KEY });
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await untilLogged('API key added');
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
  assert.equal((await runCli(['keys', 'revoke', id, '--data-dir', dir])).code, 0);
  await untilLogged('API key revoked');
  assert.equal(await stopProcess(server), 0);
  assert.ok(!(server.stdout() + server.stderr()).includes(key), 'the key is never logged');
});

test('failures of commands other than the server name the command, not "cannot start"', async (t) => {
  const dir = await tempDirFor(t);
  await writeFile(join(dir, 'keys.json'), '{not json', { mode: 0o600 });
  const list = await runCli(['keys', 'list', '--data-dir', dir]);
  assert.equal(list.code, 1);
  assert.match(
    list.stderr,
    /^keys list failed: .*keys\.json is not valid JSON: .*; restore it from a backup, or correct it by hand\n$/,
  );
  const unknownFlag = await runCli(['keys', 'create', '--data-dir', dir, '--bogus']);
  assert.equal(unknownFlag.code, 2);
  assert.equal(
    unknownFlag.stderr,
    'keys create failed: unknown option --bogus\nRun with --help to see every option.\n',
  );
  const migrate = await runCli(['migrate', '--data-dir', dir]);
  assert.equal(migrate.code, 2);
  assert.match(migrate.stderr, /^migrate failed: "migrate" needs --database-url/);
  const start = await runCli(['--port', '0', '--data-dir', dir]);
  assert.equal(start.code, 1);
  assert.match(start.stderr, /^cannot start: .*keys\.json is not valid JSON/);
});

test('warnings are "warn" lines on stderr, kept at --log-level error, and gone with silent', async (t) => {
  const warningsAt = async (level: string): Promise<string[]> => {
    // Every key revoked: the server starts, refusing everything, and warns.
    const dir = await tempDirFor(t);
    await writeFile(join(dir, 'keys.json'), '{"format":"petstore-keys/1","keys":[]}', { mode: 0o600 });
    const server = await spawnQuietServerFor(t, ['--host', '0.0.0.0', '--data-dir', dir, '--log-level', level]);
    assert.equal(await stopProcess(server), 0, server.stderr());
    const [stdout, stderr] = [server.stdout(), server.stderr()];
    assert.doesNotMatch(stdout, /warn/, 'warnings are not on stdout');
    return stderr
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as { level: string; msg: string })
      .filter((line) => line.level === 'warn')
      .map((line) => line.msg);
  };
  for (const level of ['info', 'error']) {
    const warnings = await warningsAt(level);
    assert.equal(warnings.length, 2, `${level}: ${warnings.join('\n')}`);
    assert.match(warnings[0] as string, /^serving plain HTTP on 0\.0\.0\.0: bearer keys travel in clear/);
    assert.match(warnings[1] as string, /^no API key is configured: every request under \/v1 is refused/);
  }
  assert.deepEqual(await warningsAt('silent'), []);
});
