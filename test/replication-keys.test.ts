/**
 * Object keys stay inside the replica: a key a position or a listing names is the destination's
 * word, and one that climbs out of it ('..', an absolute path, a backslash, a NUL, an empty segment)
 * is refused, naming it, by the directory and S3 destinations alike, by verify and by restore.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { fakeS3, listAnswer } from './fake-s3.js';
import { request, runCli, startServer } from './support.js';
import { dataDir } from './store-support.js';

const BAD_KEYS = [
  'lineages/L/data/../../../../outside.txt',
  '../outside.txt',
  '/etc/passwd',
  'lineages\\..\\x',
  'lineages/a\0b',
  'lineages//x',
  'lineages/./x',
  '',
  '..',
];

test('a position naming an object outside the replica directory: verify --from and restore refuse it, naming the key, and never read the file', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const server = await startServer({ dataDir: join(root, 'data'), replicateTo: replica, replicateInterval: 0.05 });
  for (let i = 1; i <= 3; i++) {
    const created = await request(server.url, 'POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: JSON.stringify({ name: `pet ${i}`, categoryId: 7 }),
    });
    assert.equal(created.status, 201);
  }
  await server.stop();
  // The newest position's first object is moved beside the replica and named there through '..'.
  const [lineage] = await readdir(join(replica, 'lineages'));
  const positionsDir = join(replica, 'lineages', lineage as string, 'positions');
  const newest = join(positionsDir, (await readdir(positionsDir)).sort().at(-1) as string);
  const position = JSON.parse(await readFile(newest, 'utf8')) as { files: Array<{ segments: Array<{ key: string }> }> };
  const segment = position.files.flatMap((f) => f.segments)[0] as { key: string };
  await writeFile(join(root, 'outside.txt'), await readFile(join(replica, segment.key)));
  const forged = `lineages/${lineage as string}/data/../../../../outside.txt`;
  segment.key = forged;
  await writeFile(newest, JSON.stringify(position));

  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1, verified.stdout + verified.stderr);
  assert.ok(verified.stdout.includes(JSON.stringify(forged)), verified.stdout);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.notEqual(restored.code, 0, restored.stdout);
  assert.ok(restored.stderr.includes(JSON.stringify(forged)), restored.stderr);
});

test('a directory destination refuses every key that names no object under it, to put, get and delete alike', async (t) => {
  const root = await dataDir(t);
  await writeFile(join(root, 'outside.txt'), 'not a replica');
  const destination = new DirectoryDestination(join(root, 'replica'));
  await destination.put('store.json', Buffer.from('{}'));
  for (const key of BAD_KEYS) {
    const refused = {
      message: new RegExp(`${JSON.stringify(key).replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')} names no object`),
    };
    await assert.rejects(destination.get(key), refused, key);
    await assert.rejects(destination.put(key, Buffer.from('x')), refused, key);
    await assert.rejects(destination.delete(key), refused, key);
  }
  assert.equal(await readFile(join(root, 'outside.txt'), 'utf8'), 'not a replica');
  assert.deepEqual(await readdir(join(root, 'replica')), ['store.json']);
});

test('an S3 listing holding a key that climbs out is refused naming it; S3 keys are checked before any request', async (t) => {
  const s3 = await fakeS3(t, (_req, res) => {
    res
      .writeHead(200, { 'content-type': 'application/xml' })
      .end(listAnswer(['lineages/a/x', 'lineages/a/../../../outside.txt']));
  });
  const destination = s3.destination();
  await assert.rejects(destination.list('lineages/'), {
    message: /"lineages\/a\/\.\.\/\.\.\/\.\.\/outside\.txt" names no object/,
  });
  const asked = s3.seen.length;
  for (const key of BAD_KEYS) {
    await assert.rejects(destination.get(key), { message: /names no object/ }, key);
    await assert.rejects(destination.put(key, Buffer.from('x')), { message: /names no object/ }, key);
    await assert.rejects(destination.delete(key), { message: /names no object/ }, key);
  }
  assert.equal(s3.seen.length, asked, 'no request was sent for a refused key');
});
