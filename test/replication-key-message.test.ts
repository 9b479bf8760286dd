/**
 * A missing or wrong key is one message, from `verify --from` as from `restore`: a destination of a
 * day's positions would otherwise print the same advice once per position.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli, startServer } from './support.js';
import { post } from './replication-support.js';
import { dataDir } from './store-support.js';

test('verify --from a sealed destination without its key, or with another, says so once for every position', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const key = join(root, 'replica.key');
  const other = join(root, 'other.key');
  for (const path of [key, other]) assert.equal((await runCli(['replicate-key', 'create', path])).code, 0);
  // Each start ships a position at its start and, when there is something new, one at its stop.
  for (const name of ['first', 'second']) {
    const server = await startServer({
      dataDir: join(root, 'data'),
      replicateTo: replica,
      replicateInterval: 3600,
      replicateKeyFile: key,
    });
    assert.equal((await post(server.url, name)).status, 201);
    await server.stop();
  }

  const without = await runCli(['verify', '--from', replica]);
  assert.equal(without.code, 1, without.stdout);
  const problems = (out: string): string[] => out.split('\n').filter((line) => line.startsWith('  '));
  const [advice, ...others] = problems(without.stdout);
  assert.match(
    advice ?? '',
    /^ {2}[2-9] positions are sealed: give the key file they were sealed with \(--replicate-key-file\) \(/,
  );
  assert.deepEqual(others, [], without.stdout);
  const wrong = await runCli(['verify', '--from', replica, '--replicate-key-file', other]);
  assert.equal(wrong.code, 1, wrong.stdout);
  const [line, ...rest] = problems(wrong.stdout);
  assert.match(
    line ?? '',
    /^ {2}[2-9] positions are sealed with key [0-9a-f]{16}, which the key file does not hold \(/,
  );
  assert.deepEqual(rest, [], wrong.stdout);
  assert.equal((await runCli(['verify', '--from', replica, '--replicate-key-file', key])).code, 0);
});
