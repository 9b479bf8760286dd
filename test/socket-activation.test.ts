/**
 * Restarts without a refused request: under systemd socket activation (LISTEN_FDS, LISTEN_PID, fd 3)
 * the server serves the socket it inherits, which outlives it; connections made while one process
 * stops and the next loads wait in the socket's backlog.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SERVER_JS, TEST_KEY, request, spawnServerFor, tempDirFor, waitFor } from './support.js';
import { needsPython, serverLog, socketLauncher } from './socket-launcher.js';

const ENV = { PETSTORE_API_KEYS: TEST_KEY };
const JSON_TYPE: Array<[string, string]> = [['content-type', 'application/json']];

test('with LISTEN_FDS and LISTEN_PID set for it, the server serves fd 3 and binds nothing', needsPython, async (t) => {
  const dir = await tempDirFor(t, 'petstore-activation-');
  const launcher = await socketLauncher(t, ['--data-dir', `${dir}/data`, '--port', '1'], ENV);
  await launcher.start(serverLog(dir, 1));
  const log = readFileSync(serverLog(dir, 1), 'utf8');
  const listening = JSON.parse(log.split('\n').find((l) => l.includes('"msg":"listening"')) as string);
  assert.equal(listening.url, `http://127.0.0.1:${launcher.port}/v1`, '--port is not used: the socket unit says where');
  assert.equal(listening.socket, 'fd 3 (petstore.socket)');
  const url = `http://127.0.0.1:${launcher.port}`;
  const created = await request(url, 'POST', '/v1/pets', { body: '{"name":"Rex","categoryId":1}', headers: JSON_TYPE });
  assert.equal(created.status, 201);
  assert.equal(await launcher.stop(), 0);
});

test('LISTEN_FDS meant for another process changes nothing: the server binds its own port', async (t) => {
  const dir = await tempDirFor(t, 'petstore-activation-');
  const server = await spawnServerFor(t, ['--data-dir', dir], { ...ENV, LISTEN_FDS: '1', LISTEN_PID: '1' });
  assert.doesNotMatch(server.stdout(), /"socket"/);
  assert.equal((await request(server.url, 'GET', '/v1/pets')).status, 200);
});

// What systemd does for a socket unit with ListenDatagram=: a bound UDP socket as fd 3, LISTEN_PID the server's own
// pid (exec keeps the pid of the process that set it).
const UDP_AS_FD_3 = `import os, socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(('127.0.0.1', 0))
os.dup2(s.fileno(), 3)
os.set_inheritable(3, True)
os.execve(sys.argv[1], sys.argv[1:], dict(os.environ, LISTEN_FDS='1', LISTEN_PID=str(os.getpid())))`;

test(
  'a UDP socket as fd 3 refuses the start in one line naming the descriptor and the socket wanted',
  needsPython,
  async (t) => {
    const dir = await tempDirFor(t, 'petstore-activation-');
    const child = spawnSync('python3', ['-c', UDP_AS_FD_3, process.execPath, SERVER_JS, '--data-dir', `${dir}/data`], {
      env: { PATH: process.env.PATH, ...ENV },
      encoding: 'utf8',
      timeout: 30_000,
    });
    assert.equal(
      child.stderr,
      'cannot start: fd 3 cannot be listened on (listen EINVAL): it must be a stream socket, TCP or Unix ' +
        '(a socket unit passes one with ListenStream=), not a datagram socket (ListenDatagram=)\n',
    );
    assert.equal(child.status, 1);
    assert.equal(child.stdout, '', 'nothing says it listens');
  },
);

const restart = 'a restart on the inherited socket refuses no request of 16 clients creating and listing';
test(restart, { ...needsPython, timeout: 120_000 }, async (t) => {
  const dir = await tempDirFor(t, 'petstore-activation-');
  const launcher = await socketLauncher(t, ['--data-dir', `${dir}/data`], ENV);
  await launcher.start(serverLog(dir, 1));
  const url = `http://127.0.0.1:${launcher.port}`;

  let restarted = false;
  let running = true;
  const failures: string[] = [];
  const created: number[] = [];
  let afterRestart = 0;
  let longest = 0;
  // Each request on a connection of its own (support's request has no agent): one made during the restart waits.
  const client = async (n: number): Promise<void> => {
    for (let i = 0; running; i++) {
      const started = performance.now();
      const res =
        i % 2 === 0
          ? await request(url, 'POST', '/v1/pets', {
              body: JSON.stringify({ name: `${n} ${i}`, categoryId: n }),
              headers: JSON_TYPE,
            }).catch((e: Error) => e)
          : await request(url, 'GET', '/v1/pets?limit=20').catch((e: Error) => e);
      longest = Math.max(longest, performance.now() - started);
      if (res instanceof Error) failures.push(`client ${n}: ${res.message}`);
      else if (res.status !== (i % 2 === 0 ? 201 : 200)) failures.push(`client ${n}: ${res.status} ${res.text}`);
      else if (i % 2 === 0) created.push((res.json as { id: number }).id);
      if (restarted && !(res instanceof Error)) afterRestart += 1;
    }
  };
  const clients = Array.from({ length: 16 }, (_, n) => client(n));
  await waitFor(() => created.length >= 50 || failures.length > 0, 60_000, '50 pets created');

  assert.equal(await launcher.stop(), 0, 'the old server stopped cleanly');
  await launcher.start(serverLog(dir, 2));
  restarted = true;
  await waitFor(() => afterRestart >= 100 || failures.length > 0, 60_000, '100 answers after the restart');
  running = false;
  await Promise.all(clients);

  assert.deepEqual(failures, []);
  const all = await request(url, 'GET', `/v1/pets?limit=100&after=${Math.min(...created) - 1}`);
  assert.equal(all.status, 200);
  const listed = new Set<number>();
  for (let page = all; ; ) {
    for (const pet of page.json as { id: number }[]) listed.add(pet.id);
    const next = /<[^>]*after=(\d+)>; rel="next"/.exec(String(page.headers.link ?? ''));
    if (next === null) break;
    page = await request(url, 'GET', `/v1/pets?limit=100&after=${next[1]}`);
  }
  assert.deepEqual(
    created.filter((id) => !listed.has(id)),
    [],
    'every acknowledged pet is served by the new process',
  );
  t.diagnostic(`${created.length} pets created, longest wait ${Math.round(longest)} ms`);
  assert.equal(await launcher.stop(), 0);
});
