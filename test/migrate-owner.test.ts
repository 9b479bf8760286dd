/**
 * `migrate` run as root on the service user's data directory: refused before anything is written
 * there, saying why and how to run it as that user, as `keys create` is.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmod, chown, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { request, runCli, startServer, tempDirFor } from './support.js';
import { NOBODY, asOtherUser, serverForOtherUser } from './other-user.js';

/** Each entry of `dir` with its owner, as `name uid`. */
async function owners(dir: string): Promise<string[]> {
  const names = (await readdir(dir)).sort();
  return Promise.all(names.map(async (name) => `${name} ${(await stat(join(dir, name))).uid}`));
}

test("migrate as root on another user's data directory is refused in words, nothing written; the advice runs as that user", {
  skip: asOtherUser,
}, async (t) => {
  const serverJs = serverForOtherUser(t);
  const parent = await tempDirFor(t);
  // As /var/lib is: others may enter it.
  await chmod(parent, 0o755);
  const dir = join(parent, 'data');
  const server = await startServer({ dataDir: dir });
  const body = '{"name":"Rex","categoryId":1}';
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body,
  });
  assert.equal(created.status, 201);
  await server.stop();
  await chown(dir, NOBODY, NOBODY);
  for (const name of await readdir(dir)) await chown(join(dir, name), NOBODY, NOBODY);
  const before = await owners(dir);

  const env = { PETSTORE_DATABASE_URL: 'postgres://petstore@127.0.0.1:1/petstore' };
  const refused = await runCli(['migrate', '--data-dir', dir], env, 5000, { serverJs });
  assert.equal(refused.code, 1, refused.stdout + refused.stderr);
  const advice = `runuser -u nobody -- node ${serverJs} migrate --data-dir ${dir}`;
  assert.equal(
    refused.stderr,
    `migrate failed: ${dir} belongs to nobody (uid ${NOBODY}): migrate locks the directory and opens its store as a ` +
      `server does, so that nothing writes to it meanwhile, and a file root made there would be root's, which that ` +
      `user's server could not use; run this as that user: ${advice}\n`,
  );
  assert.deepEqual(await owners(dir), before, 'nothing written, no lock left');
  // The advice as given gets past the directory: this copy of the package has no driver, which is what it says.
  const run = (): string =>
    execFileSync('sh', ['-c', `${advice} 2>&1; true`], { encoding: 'utf8', env: { PATH: process.env.PATH, ...env } });
  assert.match(run(), /^migrate failed: --database-url needs the "postgres" package/);
  assert.deepEqual(await owners(dir), before, 'the lock taken as that user is gone again');
});
