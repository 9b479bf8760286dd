/**
 * Root's read-only commands on the data directory of the service user (operations.md's install):
 * `keys list`, `verify` and `backup` read it and leave every file that user's, so its server goes on;
 * what they write, a backup, is root's. `verify`'s exit 1 means damage alone.
 */
import assert from 'node:assert/strict';
import { chmod, chown, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { newKey, updateKeyFile } from '#dist/auth/key-file.js';
import { petJson } from '#dist/pet/codec.js';
import { request, runCli } from './support.js';
import { NOBODY, asOtherUser, serveAsOtherUser, serverForOtherUser } from './other-user.js';
import { dataDir } from './store-support.js';

/** A data directory of `nobody`'s, 0700, with a key file, a snapshot and a journal, all 0600 and that user's. */
async function servicesDirectory(t: TestContext): Promise<{ dir: string; key: string; id: string }> {
  const base = await dataDir(t);
  await chmod(base, 0o711);
  const dir = join(base, 'data');
  await mkdir(dir, { mode: 0o700 });
  const { key, record } = newKey('ops');
  await updateKeyFile(join(dir, 'keys.json'), () => ({ keys: [record], result: undefined }));
  await writeFile(
    join(dir, 'pets.json'),
    `{"format":"petstore-pets/1","pets":[\n${petJson({ id: 1, name: 'Rex', categoryId: 7n })}\n]}\n`,
    { mode: 0o600 },
  );
  await writeFile(join(dir, 'pets-journal.1.jsonl'), `${petJson({ id: 2, name: 'Tom', categoryId: 7n })}\n`, {
    mode: 0o600,
  });
  for (const name of ['', ...(await readdir(dir))]) await chown(join(dir, name), NOBODY, NOBODY);
  return { dir, key, id: record.id };
}

test('as root on the service user\'s directory, "keys list", "verify" and "backup" work and leave its server serving', {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const { dir, key, id } = await servicesDirectory(t);
  const listed = await runCli(['keys', 'list', '--data-dir', dir], {}, 5000, { serverJs });
  assert.equal(listed.code, 0, listed.stderr);
  assert.match(listed.stdout, new RegExp(`^${id} `, 'm'));
  const verified = await runCli(['verify', '--data-dir', dir], {}, 5000, { serverJs });
  assert.equal(verified.code, 0, verified.stderr);
  assert.match(verified.stdout, /2 pets in format 1/);
  const dest = join(dir, '..', 'backup');
  const backedUp = await runCli(['backup', dest, '--data-dir', dir], {}, 5000, { serverJs });
  assert.equal(backedUp.code, 0, backedUp.stderr);
  assert.equal((await stat(join(dest, 'keys.json'))).uid, 0, "the backup is the caller's");
  for (const name of await readdir(dir))
    assert.equal((await stat(join(dir, name))).uid, NOBODY, `${name} is still the service user's`);
  const server = await serveAsOtherUser(t, serverJs, ['--data-dir', dir]);
  assert.equal((await request(server.url, 'GET', '/v1/pets', { auth: key })).status, 200);
});

test('a file of a third user in the directory is refused without advising a chown, and "verify" exits 2 there, not 1 (damage)', {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const { dir } = await servicesDirectory(t);
  await chown(join(dir, 'pets.json'), 12345, 12345);
  const verified = await runCli(['verify', '--data-dir', dir], {}, 5000, { serverJs });
  assert.equal(verified.code, 2, verified.stdout + verified.stderr);
  assert.equal(
    verified.stderr,
    `verify failed: ${dir}/pets.json is owned by uid 12345, neither this user (uid 0) nor root; refusing to use it: run this as the user it belongs to (uid 12345)\n`,
  );
  assert.doesNotMatch(verified.stderr, /chown/);
});
