/**
 * Object keys stay inside the replica, symbolic links included: someone with write access to a
 * directory destination can replace a folder or an object with a link to a place beside it, which
 * the keys' spelling alone does not show. A key that leads out through a link is refused, naming it,
 * to get, put and delete alike, and verify and restore never read through it.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { request, runCli, startServer } from './support.js';
import { dataDir } from './store-support.js';

test("a lineage's data folder made a link to a copy beside the replica: verify --from and restore refuse it, naming the key", async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const server = await startServer({ dataDir: join(root, 'data'), replicateTo: replica, replicateInterval: 0.05 });
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ name: 'linked', categoryId: 7 }),
  });
  assert.equal(created.status, 201);
  await server.stop();
  // The same bytes, moved out: only the link's leaving the replica is wrong.
  const [lineage] = await readdir(join(replica, 'lineages'));
  const data = join(replica, 'lineages', lineage as string, 'data');
  await rename(data, join(root, 'outside'));
  await symlink(join(root, 'outside'), data);

  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1, verified.stdout + verified.stderr);
  assert.match(verified.stdout, new RegExp(`lineages/${lineage}/data/\\S+ leads out of ${replica}`), verified.stdout);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.notEqual(restored.code, 0, restored.stdout);
  assert.match(restored.stderr, /leads out of .*a symbolic link/, restored.stderr);
});

test('a directory destination refuses to get, put or delete through a link that leads out of it', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const outside = join(root, 'outside');
  await mkdir(outside);
  await writeFile(join(outside, 'secret'), 'not a replica');
  const destination = new DirectoryDestination(replica);
  await destination.put('store.json', Buffer.from('{}'));
  await symlink(outside, join(replica, 'lineages'));
  await symlink(join(outside, 'secret'), join(replica, 'head.json'));
  const refused = (key: string) => ({ message: new RegExp(`^${key} leads out of ${replica} \\(a symbolic link\\)`) });

  await assert.rejects(destination.get('head.json'), refused('head.json'));
  await assert.rejects(destination.get('lineages/secret'), refused('lineages/secret'));
  await assert.rejects(destination.put('lineages/L/data/x', Buffer.from('x')), refused('lineages/L/data/x'));
  await assert.rejects(destination.delete('lineages/secret'), refused('lineages/secret'));
  assert.deepEqual(await readdir(outside), ['secret']);
  assert.equal(await readFile(join(outside, 'secret'), 'utf8'), 'not a replica');
  // A link at the root itself (a mount point reached through one) is the operator's choice, not a way out.
  const linkedRoot = new DirectoryDestination(join(root, 'linked-root'));
  await symlink(replica, join(root, 'linked-root'));
  assert.equal((await linkedRoot.get('store.json'))?.toString(), '{}');
  await linkedRoot.put('store.json', Buffer.from('{"a":1}'));
  assert.equal(await readFile(join(replica, 'store.json'), 'utf8'), '{"a":1}');
});
