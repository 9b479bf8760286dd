/**
 * The README's quick start under the umasks people have: 002 (Ubuntu's default for users), 022 and
 * 077. A checkout is made as git makes one under that umask — directories 0777 and files 0666, less
 * the umask, data/ with its .gitkeep — and `npm start` must serve from it, its ./data made private
 * (0700) whatever the umask, saying so when it changed the mode.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { cp, stat, symlink } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test, type TestContext } from 'node:test';
import { TEST_KEY, launchServer, request, stopProcess, tempDirFor, type ServerProcess } from './support.js';

const ROOT = resolve(__dirname, '../..');

/** Every file git tracks in the repository (the index, so a staged change counts), or why they cannot be listed. */
function trackedFiles(): string[] | string {
  const listed = spawnSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  if (listed.error !== undefined || listed.status !== 0)
    return `not a git checkout, or no git: ${listed.error?.message ?? listed.stderr.trim()}`;
  return listed.stdout.split('\0').filter((path) => path !== '');
}
const tracked = trackedFiles();

/**
 * A checkout made under `umask`: the tracked files of data/ (what the quick start reads and writes
 * besides dist/) made as git makes them, with package.json, and the dist/ this test run built.
 */
async function checkout(t: TestContext, umask: string): Promise<string> {
  const dir = await tempDirFor(t, 'petstore-checkout-');
  const files = (tracked as string[]).filter((path) => path.startsWith('data/'));
  const made = spawnSync(
    'sh',
    ['-c', `umask ${umask} && for f in "$@"; do mkdir -p "$(dirname "$f")" && : > "$f"; done`, 'sh', ...files],
    { cwd: dir },
  );
  assert.equal(made.status, 0, String(made.stderr));
  await cp(join(ROOT, 'package.json'), join(dir, 'package.json'));
  await symlink(join(ROOT, 'dist'), join(dir, 'dist'));
  return dir;
}

/** `npm start` under `umask` in `dir`, resolved once it listens; stopped (SIGTERM, which npm passes on) after `t`. */
async function npmStart(t: TestContext, dir: string, umask: string): Promise<ServerProcess> {
  const server = await launchServer('sh', ['-c', `umask ${umask} && exec npm start -- --port 0`], {
    cwd: dir,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PETSTORE_API_KEYS: TEST_KEY },
  });
  t.after(() => stopProcess(server));
  return server;
}

for (const umask of ['002', '022', '077']) {
  test(`under umask ${umask}, npm start in a fresh checkout serves, with ./data private (0700)`, {
    skip: typeof tracked === 'string' ? tracked : false,
  }, async (t) => {
    const dir = await checkout(t, umask);
    assert.equal((await stat(join(dir, 'data'))).mode & 0o777, 0o777 & ~parseInt(umask, 8), 'data/ as git makes it');
    const server = await npmStart(t, dir, umask);
    const { url } = server;
    const created = await request(url, 'POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: '{"name":"Rex","categoryId":1}',
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await stat(join(dir, 'data'))).mode & 0o777, 0o700);
    const said = server
      .stdout()
      .split('\n')
      .filter((line) => line.includes('made ./data private'));
    assert.deepEqual(
      said.map((line) => (JSON.parse(line) as { msg: string }).msg),
      umask === '077'
        ? []
        : [`made ./data private (mode ${(0o777 & ~parseInt(umask, 8)).toString(8)} → 700), as it held no data yet`],
    );
    assert.equal(
      await stat(join(dir, 'data', 'keys.json')).catch(() => undefined),
      undefined,
      'PETSTORE_API_KEYS: no key file made',
    );
  });
}
