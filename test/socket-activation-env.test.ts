/** Which processes take a socket from systemd's variables (sd_listen_fds): only the one they name. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { activatedSocket } from '#dist/service/socket-activation.js';

test("variables naming another pid are not this process's: no socket, and they are left alone", () => {
  const env = { LISTEN_PID: '1', LISTEN_FDS: '1' };
  assert.equal(activatedSocket(env, 4242), undefined);
  assert.deepEqual(env, { LISTEN_PID: '1', LISTEN_FDS: '1' });
});

test('no variables, or LISTEN_FDS=0: no socket', () => {
  assert.equal(activatedSocket({}, 4242), undefined);
  assert.equal(activatedSocket({ LISTEN_PID: '4242', LISTEN_FDS: '0' }, 4242), undefined);
});

test('more than one socket, or a count that is not one, refuses with a message that says what to change', () => {
  const cases = [
    ['2', 'systemd passed 2 sockets'],
    ['x', 'systemd passed LISTEN_FDS="x", not a count of sockets'],
  ] as const;
  for (const [count, said] of cases) {
    const env = { LISTEN_PID: '4242', LISTEN_FDS: count };
    assert.throws(
      () => activatedSocket(env, 4242),
      (error: Error & { code?: string }) => {
        assert.equal(error.code, 'ERR_PETSTORE_SOCKET_ACTIVATION');
        assert.ok(error.message.startsWith(said), error.message);
        return true;
      },
    );
    assert.deepEqual(env, {}, 'the variables are removed once read');
  }
});

test('one socket for this process where fd 3 is not an open socket refuses, naming the descriptor', () => {
  // A child given stdin, stdout and stderr alone: its fd 3 is closed, whatever runs this test.
  const module = resolve(__dirname, '../service/socket-activation.js');
  const script = `const { activatedSocket } = require(${JSON.stringify(module)});
    try { activatedSocket({ LISTEN_PID: String(process.pid), LISTEN_FDS: '1' }); }
    catch (error) { console.log(error.message); }`;
  const child = spawnSync(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
  assert.equal(child.stdout, 'LISTEN_FDS=1 is set for this process, but fd 3 is not an open socket\n', child.stderr);
});
