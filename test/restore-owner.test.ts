/**
 * Restore and backup as the service user: into an empty directory the caller owns, in a parent it
 * cannot write to (/var/lib for `petstore`); and as root into a directory the service user owns, the
 * files are left that user's, so its server opens them. Run as `nobody` (other-user.ts).
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { TEST_KEY, request, runCli, startServer } from './support.js';
import { NOBODY, OTHER_USER, asOtherUser, serveAsOtherUser, serverForOtherUser } from './other-user.js';

/** A root-owned 0755 directory, as /var/lib is, holding an empty `target` and `replica` that nobody owns. */
async function varLib(t: TestContext): Promise<{ root: string; target: string; replica: string; data: string }> {
  const root = await mkdtemp(join(tmpdir(), 'petstore-varlib-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  await chmod(root, 0o755);
  const target = join(root, 'petstore');
  await mkdir(target, { mode: 0o700 });
  await chown(target, NOBODY, NOBODY);
  const data = join(root, 'data');
  const replica = join(root, 'replica');
  const server = await startServer({ dataDir: data, replicateTo: replica, replicateInterval: 0.05 });
  for (let i = 1; i <= 3; i++) {
    const created = await request(server.url, 'POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: JSON.stringify({ name: `pet ${i}`, categoryId: 1 }),
    });
    assert.equal(created.status, 201);
  }
  await server.stop();
  return { root, target, replica, data };
}

async function chownTree(path: string, uid: number): Promise<void> {
  await chown(path, uid, uid);
  for (const entry of await readdir(path, { withFileTypes: true })) {
    if (entry.isDirectory()) await chownTree(join(path, entry.name), uid);
    else await chown(join(path, entry.name), uid, uid);
  }
}

async function ownersBelow(path: string): Promise<number[]> {
  const owners = [(await stat(path)).uid];
  for (const entry of await readdir(path, { withFileTypes: true })) {
    if (entry.isDirectory()) owners.push(...(await ownersBelow(join(path, entry.name))));
    else owners.push((await stat(join(path, entry.name))).uid);
  }
  return owners;
}

test('restore and backup as the service user into an empty directory it owns, in a parent it cannot write to', {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const { root, target, replica, data } = await varLib(t);
  await chownTree(replica, NOBODY);
  const restored = await runCli(['restore', target, '--from', replica], {}, 60_000, { serverJs, user: OTHER_USER });
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 3 pets/);
  assert.deepEqual((await readdir(root)).sort(), ['data', 'petstore', 'replica'], 'nothing left beside the target');
  const served = await serveAsOtherUser(t, serverJs, ['--data-dir', target], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(
    JSON.parse((await request(served.url, 'GET', '/v1/pets', { headers: [['x-api-key', TEST_KEY]] })).text).length,
    3,
  );
  served.child.kill('SIGTERM');
  await served.exited;

  await chownTree(data, NOBODY);
  const backupDir = join(root, 'backup');
  await mkdir(backupDir, { mode: 0o700 });
  await chown(backupDir, NOBODY, NOBODY);
  const backedUp = await runCli(['backup', backupDir, '--data-dir', data], {}, 60_000, { serverJs, user: OTHER_USER });
  assert.equal(backedUp.code, 0, backedUp.stderr);
  assert.ok((await readdir(backupDir)).includes('pets.json'));
});

test("a restore as root into a directory the service user owns leaves every file that user's, and its server starts on it", {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const { target, replica } = await varLib(t);
  const restored = await runCli(['restore', target, '--from', replica]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.deepEqual([...new Set(await ownersBelow(target))], [NOBODY]);
  const served = await serveAsOtherUser(t, serverJs, ['--data-dir', target], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(
    JSON.parse((await request(served.url, 'GET', '/v1/pets', { headers: [['x-api-key', TEST_KEY]] })).text).length,
    3,
  );
});

test("a start as the service user on a data directory root keeps closed names the directory and its owner, not the lock's text", {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const root = await mkdtemp(join(tmpdir(), 'petstore-varlib-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  await chmod(root, 0o755);
  const data = join(root, 'petstore');
  await mkdir(data, { mode: 0o700 });
  const refused = await runCli(['--port', '0', '--data-dir', data], { PETSTORE_API_KEYS: TEST_KEY }, 60_000, {
    serverJs,
    user: OTHER_USER,
  });
  assert.equal(refused.code, 1);
  assert.ok(refused.stderr.includes(`${data} belongs to root (uid 0) with mode 700`), refused.stderr);
  assert.doesNotMatch(refused.stderr, /may not create [0-9]+ /);
});

test('as root, --replicate-to a directory another user owns is refused in words, and the failed start shows no generated key', {
  skip: asOtherUser,
}, async (t) => {
  const root = await mkdtemp(join(tmpdir(), 'petstore-varlib-'));
  t.after(() => rm(root, { recursive: true, force: true }));
  const replica = join(root, 'replica');
  await mkdir(replica, { mode: 0o700 });
  await chown(replica, NOBODY, NOBODY);
  const refused = await runCli(['--port', '0', '--data-dir', join(root, 'data'), '--replicate-to', replica]);
  assert.equal(refused.code, 1);
  assert.ok(
    refused.stderr.startsWith(
      `cannot start: --replicate-to ${replica} cannot be used: ${replica} is owned by uid ${NOBODY}, neither this user (uid 0) nor root`,
    ),
    refused.stderr,
  );
  assert.doesNotMatch(refused.stderr, /ERR_UNSAFE_FILE|pet_/);
});
