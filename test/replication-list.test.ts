/**
 * `restore --list` marks what a restore without --lineage cannot reach: the positions of the newest
 * history are those of its lineage and of the lineages it continues from, up to where each was
 * continued from, so a store started twice lists every one of its positions unmarked.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli, startServer } from './support.js';
import { post } from './replication-support.js';
import { dataDir } from './store-support.js';

test('restore --list marks no position of the lineages the newest history continues from', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  for (const name of ['before the restart', 'after the restart']) {
    const server = await startServer({ dataDir: dir, replicateTo: replica, replicateInterval: 3600 });
    assert.equal((await post(server.url, name)).status, 201);
    await server.stop();
  }

  const listed = await runCli(['restore', '--list', '--from', replica]);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = listed.stdout.trim().split('\n').slice(1);
  const generations = rows.map((row) => row.trim().split(/ +/)[1]);
  assert.ok(generations.includes('1') && generations.includes('2'), listed.stdout);
  assert.deepEqual(
    rows.filter((row) => row.includes('not the newest history')),
    [],
    listed.stdout,
  );
});
