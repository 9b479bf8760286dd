/**
 * The command line, black-box: `node dist/server.js` as a child process, its flags and environment,
 * its first-start key, its signals and its refusals to start.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { SETTINGS } from '#dist/service/settings.js';
import { nodeVersionProblem } from '#dist/cli/node-version.js';
import {
  SERVER_JS,
  launchServer,
  request,
  runCli,
  spawnServerFor,
  stopProcess,
  tempDirFor,
  waitFor,
  within,
} from './support.js';

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

const temp = (t: TestContext): Promise<string> => tempDirFor(t, 'petstore-cli-');

const serve = spawnServerFor;

const stop = stopProcess;

/** Every file under a directory with its content, to search for what must not be there. */
async function filesOf(dir: string): Promise<Array<{ name: string; text: string }>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = [];
  for (const entry of entries) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    files.push({ name: path, text: await readFile(path, 'latin1') });
  }
  return files;
}

const jsonPost = (body: string): { headers: Array<[string, string]>; body: string } => ({
  headers: [['content-type', 'application/json']],
  body,
});

test('--help lists every flag with its environment twin and default, and exits 0', async () => {
  const { code, stdout, stderr } = await runCli(['--help']);
  assert.equal(code, 0);
  assert.equal(stderr, '');
  for (const s of SETTINGS) {
    // The option's entry: from the line that starts with the flag to the next line that starts with one.
    const start = new RegExp(`^[ \\t]+--${s.flag}\\b`, 'm').exec(stdout)?.index;
    assert.ok(start !== undefined, `--${s.flag} is listed`);
    const next = /^[ \t]+--/m.exec(stdout.slice(start + 3));
    const block = stdout.slice(start, next === null ? undefined : start + 3 + next.index);
    // The flag and its description stay apart: at least two spaces, or a line of its own.
    const value = s.type === 'switch' ? '' : ' <value>';
    assert.match(
      block,
      new RegExp(`^[ \\t]+--${s.flag}${value}(  |\n)`),
      `--${s.flag} is not run into its description`,
    );
    assert.match(block, new RegExp(`\\b${s.env}\\b`), `--${s.flag} names ${s.env}`);
    if (s.default !== undefined)
      assert.ok(block.includes(`default ${String(s.default)}`), `--${s.flag} shows its default ${String(s.default)}`);
    else assert.match(block, /default/, `--${s.flag} says what happens by default`);
  }
  assert.match(stdout, /--help\b/);
  assert.match(stdout, /PETSTORE_API_KEYS/);
  assert.match(stdout, /keys create/);
});

test('--help exits 0 even when the environment holds a bad value', async () => {
  const { code } = await runCli(['--help'], { PORT: 'abc' });
  assert.equal(code, 0);
});

test('an unknown flag exits 2 and names the flag', async (t) => {
  const dir = await temp(t);
  const { code, stdout, stderr } = await runCli(['--data-dir', dir, '--bogus-flag'], { PETSTORE_API_KEYS: 'k' });
  assert.equal(code, 2);
  assert.match(stderr, /--bogus-flag/);
  assert.match(stderr, /--help/);
  assert.doesNotMatch(stdout, /listening/);
});

test('an unknown flag close to a known one suggests it', async () => {
  for (const [flag, known] of [
    ['--prot', '--port'],
    ['--data-dri', '--data-dir'],
    ['--max-conn', '--max-connections'],
    ['--trust-proxies', '--trust-proxy'],
  ]) {
    const { code, stderr } = await runCli([flag as string]);
    assert.equal(code, 2);
    assert.equal(
      stderr,
      `cannot start: unknown option ${flag}; did you mean ${known}?\nRun with --help to see every option.\n`,
    );
  }
});

test("an unknown flag's message names it plainly, without Node's advice and unbalanced quote", async () => {
  for (const flag of ['--bogus-flag', '-x']) {
    const { code, stderr } = await runCli([flag]);
    assert.equal(code, 2);
    assert.equal(stderr, `cannot start: unknown option ${flag}\nRun with --help to see every option.\n`);
  }
});

test('--version prints the package version; -h is --help', async () => {
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  const pkg = JSON.parse(await readFile(join(__dirname, '../../package.json'), 'utf8')) as { version: string };
  assert.equal(version.stdout, `${pkg.version}\n`);
  const short = await runCli(['-h']);
  assert.equal(short.code, 0);
  assert.equal(short.stdout, (await runCli(['--help'])).stdout);
  assert.match(short.stdout, /-h, --help/);
  assert.match(short.stdout, /--version/);
});

test('under npm start, a stray value says to put -- before the flags', async () => {
  const { code, stderr } = await runCli(['9000'], { npm_lifecycle_event: 'start' });
  assert.equal(code, 2);
  assert.match(
    stderr,
    /unknown command "9000"; to pass flags through npm start, put -- before them: npm start -- --port 9000/,
  );
});

test('an unknown command exits 2 and names it', async (t) => {
  const dir = await temp(t);
  const { code, stderr } = await runCli(['--data-dir', dir, 'frobnicate'], { PETSTORE_API_KEYS: 'k' });
  assert.equal(code, 2);
  assert.match(stderr, /frobnicate/);
});

const badValues: Array<{ name: string; args: string[]; env: NodeJS.ProcessEnv; names: RegExp }> = [
  { name: '--port abc', args: ['--port', 'abc'], env: {}, names: /--port/ },
  { name: '--port 65536', args: ['--port', '65536'], env: {}, names: /--port/ },
  { name: 'PORT=99999', args: [], env: { PORT: '99999' }, names: /PORT/ },
  { name: '--log-level loud', args: ['--log-level', 'loud'], env: {}, names: /--log-level/ },
  { name: 'PETSTORE_LOG_LEVEL=loud', args: [], env: { PETSTORE_LOG_LEVEL: 'loud' }, names: /PETSTORE_LOG_LEVEL/ },
  { name: '--body-limit 0', args: ['--body-limit', '0'], env: {}, names: /--body-limit/ },
  { name: '--body-limit 1e3', args: ['--body-limit', '1e3'], env: {}, names: /--body-limit/ },
  { name: '--port without a value', args: ['--port'], env: {}, names: /--port/ },
  {
    name: 'a key with a space in PETSTORE_API_KEYS',
    args: [],
    env: { PETSTORE_API_KEYS: 'good-key,bad key' },
    names: /PETSTORE_API_KEYS/,
  },
];
for (const bad of badValues) {
  test(`a bad value (${bad.name}) exits 2 and names the setting`, async (t) => {
    const dir = await temp(t);
    const { code, stdout, stderr } = await runCli(['--data-dir', dir, ...bad.args], {
      PETSTORE_API_KEYS: 'k',
      ...bad.env,
    });
    assert.equal(code, 2, stderr);
    assert.match(stderr, bad.names);
    assert.doesNotMatch(stdout, /listening/);
  });
}

test('a flag wins over its environment variable, and the environment variable is used without the flag', async (t) => {
  const dir = await temp(t);
  const key = 'flag-wins-key-0123456789';
  // These values would each stop the server if they were read.
  const badEnv = {
    PETSTORE_API_KEYS: key,
    PORT: 'not-a-port',
    PETSTORE_LOG_LEVEL: 'loud',
    PETSTORE_BODY_LIMIT: '1000000',
  };
  const refused = await runCli(['--data-dir', dir], badEnv);
  assert.equal(refused.code, 2, 'the environment is read when no flag is given');

  // spawnServer passes --port 0; --log-level and --body-limit override the rest.
  const server = await serve(t, ['--data-dir', dir, '--log-level', 'info', '--body-limit', '100'], badEnv);
  const body = JSON.stringify({ name: 'x'.repeat(120), categoryId: 1 });
  const res = await request(server.url, 'POST', '/v1/pets', { ...jsonPost(body), auth: key });
  assert.equal(res.status, 413, 'the --body-limit flag, not PETSTORE_BODY_LIMIT, is in force');
  assert.equal(await stop(server), 0);
});

test('an environment twin configures the server when its flag is absent', async (t) => {
  const dir = await temp(t);
  const key = 'env-twin-key-0123456789';
  const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: key, PETSTORE_BODY_LIMIT: '100' });
  const res = await request(server.url, 'POST', '/v1/pets', {
    ...jsonPost(JSON.stringify({ name: 'x'.repeat(120), categoryId: 1 })),
    auth: key,
  });
  assert.equal(res.status, 413);
  const small = await request(server.url, 'POST', '/v1/pets', {
    ...jsonPost('{"name":"Rex","categoryId":1}'),
    auth: key,
  });
  assert.equal(small.status, 201);
  assert.equal(await stop(server), 0);
});

test('with no key anywhere the first start generates one, prints it once on stderr and keeps only its hash', async (t) => {
  const dir = await temp(t);
  const first = await serve(t, ['--data-dir', dir]);
  const printed = /\n\s*\n[ \t]+(\S{20,})[ \t]*\n/.exec(first.stderr());
  assert.ok(printed, `a generated key is printed on stderr:\n${first.stderr()}`);
  const key = printed[1] as string;
  assert.equal(first.stderr().split(key).length - 1, 1, 'the key is printed exactly once');
  assert.ok(!first.stdout().includes(key), 'the key is not in the stdout log');

  const keyFile = JSON.parse(await readFile(join(dir, 'keys.json'), 'utf8')) as {
    keys: Array<Record<string, unknown>>;
  };
  assert.equal(keyFile.keys.length, 1);
  assert.equal(keyFile.keys[0]?.sha256, sha256(key));

  assert.equal((await request(first.url, 'GET', '/v1/pets', { auth: key })).status, 200);
  assert.equal((await request(first.url, 'GET', '/v1/pets', { auth: false })).status, 401);
  assert.equal(
    (await request(first.url, 'POST', '/v1/pets', { ...jsonPost('{"name":"Rex","categoryId":1}'), auth: key })).status,
    201,
  );

  for (const file of await filesOf(dir))
    assert.ok(!file.text.includes(key), `${file.name} does not hold the key while running`);
  assert.equal(await stop(first), 0);
  for (const file of await filesOf(dir))
    assert.ok(!file.text.includes(key), `${file.name} does not hold the key after stopping`);
  assert.ok(!first.stdout().includes(key));

  const second = await serve(t, ['--data-dir', dir]);
  assert.ok(!second.stderr().includes(key), 'the second start does not print the key again');
  assert.doesNotMatch(second.stderr(), /generated/i, 'the second start generates no key');
  assert.equal(
    (await request(second.url, 'GET', '/v1/pets', { auth: key })).status,
    200,
    'the generated key still works',
  );
  const keyFileAfter = JSON.parse(await readFile(join(dir, 'keys.json'), 'utf8')) as { keys: unknown[] };
  assert.equal(keyFileAfter.keys.length, 1, 'no second key was generated');
  assert.equal(await stop(second), 0);
});

test('PETSTORE_API_KEYS takes comma-separated keys; each works and no key is generated', async (t) => {
  const dir = await temp(t);
  const a = 'first-env-key-0123456789';
  const b = 'second-env-key-9876543210';
  const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: ` ${a} , ${b} ` });
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: a })).status, 200);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: b })).status, 200);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: `${a},${b}` })).status, 401);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: 'another-key' })).status, 401);
  assert.doesNotMatch(server.stderr(), /generated/i);
  await assert.rejects(
    readFile(join(dir, 'keys.json')),
    { code: 'ENOENT' },
    'no key file is written for configured keys',
  );
  assert.equal(await stop(server), 0);
});

/** A create whose headers have reached the handler (`100 Continue` came back) but whose body has not been sent. */
function startCreate(
  url: string,
  key: string,
  body: string,
): Promise<{ finish: () => Promise<{ status: number; text: string }> }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = httpRequest({
      host: hostname,
      port,
      method: 'POST',
      path: '/v1/pets',
      agent: false,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(body),
        expect: '100-continue',
      },
    });
    const response = new Promise<{ status: number; text: string }>((done, fail) => {
      req.on('response', (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (s: string) => (text += s))
          .on('end', () => done({ status: res.statusCode ?? 0, text }))
          .on('error', fail);
      });
      req.on('error', fail);
    });
    response.catch(reject);
    req.on('continue', () =>
      resolve({
        finish: () => {
          req.end(body);
          return response;
        },
      }),
    );
    req.flushHeaders();
  });
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`${signal}: stops accepting, finishes the request in flight, leaves the data durable and exits 0`, async (t) => {
    const dir = await temp(t);
    const key = 'signal-key-0123456789';
    const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: key });
    assert.equal(
      (await request(server.url, 'POST', '/v1/pets', { ...jsonPost('{"name":"Before","categoryId":1}'), auth: key }))
        .status,
      201,
    );

    const inFlight = await within(
      startCreate(server.url, key, '{"name":"InFlight","categoryId":2}'),
      5000,
      'request reaches the handler',
    );
    server.child.kill(signal);
    await waitFor(() => server.stdout().includes('"msg":"stopping"'), 5000, 'server logs that it stops');
    // Refused, or reset when the kernel completed the handshake just before the listener closed: never served.
    await assert.rejects(
      request(server.url, 'GET', '/healthz'),
      (error: NodeJS.ErrnoException) => ['ECONNREFUSED', 'ECONNRESET'].includes(error.code ?? ''),
      'no new connection is accepted',
    );

    const res = await within(inFlight.finish(), 5000, 'in-flight response');
    assert.equal(res.status, 201, res.text);
    assert.equal((JSON.parse(res.text) as { name: string }).name, 'InFlight');
    assert.equal(await within(server.exited, 5000, 'exit'), 0);

    const names = await readdir(dir);
    assert.ok(names.includes('pets.json'), `pets.json is written: ${names.join(', ')}`);
    const journals = names.filter((n) => /journal/.test(n));
    assert.equal(journals.length, 1, `one journal is left, the one pets.json names: ${journals.join(', ')}`);
    assert.equal((await readFile(join(dir, journals[0] as string))).length, 0, 'and it is empty');
    assert.ok(!names.includes('petstore.lock'), 'the lock is released');
    const snapshot = await readFile(join(dir, 'pets.json'), 'utf8');
    assert.match(snapshot, /"Before"/);
    assert.match(snapshot, /"InFlight"/);

    const again = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: key });
    const list = await request(again.url, 'GET', '/v1/pets', { auth: key });
    assert.deepEqual(
      (list.json as Array<{ name: string }>).map((p) => p.name),
      ['Before', 'InFlight'],
    );
    assert.equal(await stop(again), 0);
  });
}

test('a graceful stop ends with a "stopped" line saying what was done', async (t) => {
  const dir = await temp(t);
  const server = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: 'k' });
  assert.equal(await stop(server), 0);
  const last = server.stdout().trim().split('\n').at(-1) ?? '';
  const line = JSON.parse(last) as Record<string, unknown>;
  assert.equal(line.msg, 'stopped');
  assert.equal(line.signal, 'SIGTERM');
  assert.equal(typeof line.ms, 'number');
  assert.match(String(line.result), /store closed and durable, lock released/);
});

test('an idle keep-alive connection does not hold up a graceful stop', async (t) => {
  const dir = await temp(t);
  const key = 'keepalive-key-0123456789';
  const server = await serve(t, ['--data-dir', dir, '--keep-alive-timeout', '60000', '--shutdown-timeout', '60000'], {
    PETSTORE_API_KEYS: key,
  });
  const { Agent } = await import('node:http');
  const agent = new Agent({ keepAlive: true });
  t.after(() => agent.destroy());
  const { hostname, port } = new URL(server.url);
  await new Promise<void>((resolve, reject) => {
    httpRequest({ host: hostname, port, path: '/healthz', agent }, (res) => res.resume().on('end', resolve))
      .on('error', reject)
      .end();
  });
  const started = Date.now();
  assert.equal(await stop(server), 0);
  assert.ok(Date.now() - started < 3000, `stopped in ${Date.now() - started} ms`);
});

test('a corrupt keys.json refuses the start, even when PETSTORE_API_KEYS holds keys', async (t) => {
  // Starting on the environment's keys alone would silently drop every key the file was meant to hold.
  const dir = await temp(t);
  await writeFile(join(dir, 'keys.json'), '{"keys": [', { mode: 0o600 });
  const { code, stdout, stderr } = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: 'env-key-1' });
  assert.equal(code, 1);
  assert.match(stderr, /^cannot start: .*keys\.json is not valid JSON/);
  assert.doesNotMatch(stdout, /listening/);
});

test('a data directory that is a regular file stops the start with a message naming it', async (t) => {
  const dir = await temp(t);
  const file = join(dir, 'not-a-directory');
  await writeFile(file, 'hello');
  const { code, stdout, stderr } = await runCli(['--port', '0', '--data-dir', file], { PETSTORE_API_KEYS: 'k' });
  assert.notEqual(code, 0);
  assert.ok(stderr.includes(file), stderr);
  assert.doesNotMatch(stdout, /listening/);
  assert.doesNotMatch(stderr, /^\s+at /m, 'no stack trace for a known start-up failure');
});

test('a second server on the same data directory exits non-zero naming the lock; the first keeps serving', async (t) => {
  const dir = await temp(t);
  const key = 'lock-key-0123456789';
  const first = await serve(t, ['--data-dir', dir], { PETSTORE_API_KEYS: key });
  const second = await runCli(['--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: key });
  assert.notEqual(second.code, 0);
  assert.match(second.stderr, /lock/i);
  assert.ok(second.stderr.includes(dir), second.stderr);
  assert.doesNotMatch(second.stdout, /listening/);
  assert.equal((await request(first.url, 'GET', '/v1/pets', { auth: key })).status, 200);
  assert.equal(await stop(first), 0);
});

test('a command whose reader stops early ("keys create | head -1") ends quietly with its own status, no EPIPE stack', async (t) => {
  const dir = await tempDirFor(t);
  for (const args of [['keys', 'create'], ['keys', 'list'], ['--help']]) {
    // The reader gone before the command writes: its write meets a closed pipe (EPIPE).
    const child = spawn(process.execPath, [SERVER_JS, ...args, '--data-dir', join(dir, 'data')], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const code = await within(new Promise((resolve) => child.on('close', resolve)), 10_000, `${args.join(' ')} ends`);
    assert.equal(stderr, '', args.join(' '));
    assert.equal(code, 0, args.join(' '));
  }
});

test('a database password on the command line is warned about at start, without the password; in PETSTORE_DATABASE_URL or a URL without one, it is not', async () => {
  const warning =
    'the database password is on the command line (--database-url), where ps shows it to every user of this machine; ' +
    'give the URL in PETSTORE_DATABASE_URL instead, or leave the password out of the URL and set PGPASSWORD';
  // Port 1 refuses the connection at once: the start fails after the warning.
  for (const url of [
    'postgres://petstore:s3cret@127.0.0.1:1/petstore',
    'postgres://petstore@127.0.0.1:1/petstore?password=s3cret',
  ]) {
    const started = await runCli(['--port', '0', '--database-url', url]);
    assert.equal(started.code, 1, started.stderr);
    // Warnings are log lines on stderr, before the line that says why the start failed.
    const lines = started.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: string; msg: string });
    assert.deepEqual(
      lines.map(({ level, msg }) => ({ level, msg })),
      [{ level: 'warn', msg: warning }],
      url,
    );
    const listed = await runCli(['keys', 'list', '--database-url', url]);
    assert.equal(listed.stderr.split('\n')[0], `warning: ${warning}`, url);
    assert.doesNotMatch(started.stdout + started.stderr + listed.stderr, /s3cret/);
  }
  for (const [args, env] of [
    [['--database-url', 'postgres://petstore@127.0.0.1:1/petstore'], {}],
    [[], { PETSTORE_DATABASE_URL: 'postgres://petstore:s3cret@127.0.0.1:1/petstore' }],
  ] as const) {
    const started = await runCli(['--port', '0', ...args], env);
    assert.equal(started.code, 1, started.stderr);
    assert.match(started.stderr, /^cannot start: cannot use the database/, 'no warning before it');
  }
});

test('the start names the data directory by its absolute path: the default ./data is that of the directory it was started in', async (t) => {
  const cwd = await temp(t);
  const server = await launchServer(process.execPath, [SERVER_JS, '--port', '0'], {
    cwd,
    env: { PATH: process.env.PATH },
  });
  t.after(async () => {
    if (server.child.exitCode === null) server.child.kill('SIGKILL');
    await server.exited;
  });
  const listening = JSON.parse(server.stdout().split('\n')[0] as string) as Record<string, unknown>;
  assert.equal(listening.dataDir, join(cwd, 'data'));
  assert.ok(
    server.stderr().includes(`only its SHA-256 hash is kept in ${join(cwd, 'data', 'keys.json')}:`),
    server.stderr(),
  );
  assert.equal(await stopProcess(server), 0);
});

test('a Node older than engines asks is refused at once, saying the version needed and the one found', async () => {
  const engines = (
    JSON.parse(await readFile(join(__dirname, '../../package.json'), 'utf8')) as { engines: { node: string } }
  ).engines.node;
  assert.equal(engines, '>=20.19.2');
  for (const old of ['18.19.1', '20.11.1', '19.9.0', '20.12.2', '20.19.1', '20.18.9']) {
    assert.equal(
      nodeVersionProblem(old),
      `this server needs Node 20.19.2 or later; this is Node ${old} (${process.execPath})`,
    );
  }
  for (const fine of ['20.19.2', '20.19.10', '20.20.2', '21.0.0', '22.11.0', '100.0.0'])
    assert.equal(nodeVersionProblem(fine), undefined, fine);
});
