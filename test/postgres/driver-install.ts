/**
 * docs/postgresql.md's recipes for adding the driver to a production install, run from the packed
 * tarball as written there: each adds `postgres` and nothing else, and the server then runs on a
 * database. Needs the npm registry (the recipes fetch the driver); without it the test says so and skips.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { launchServer, request, stopProcess, tempDirFor, TEST_KEY } from '../support.js';
import type { Cluster } from '../postgres-support.js';

const ROOT = resolve(__dirname, '../../..');
const IN_A_PROJECT = 'npm install postgres@^3.4';
const IN_A_CLONE = 'npm install --prefix dist --no-save --no-package-lock postgres@^3.4';

// What reaching the registry may take from the environment: a certificate authority of the network's
// (Node's official builds know only their bundled ones, so npm on such a build retries until its
// timeout without it) and proxies.
const NETWORK = [
  'NODE_EXTRA_CA_CERTS',
  'SSL_CERT_FILE',
  'HTTPS_PROXY',
  'HTTP_PROXY',
  'NO_PROXY',
  'https_proxy',
  'http_proxy',
  'no_proxy',
];
const networkEnv = (): NodeJS.ProcessEnv =>
  Object.fromEntries(
    NETWORK.filter((name) => process.env[name] !== undefined).map((name) => [name, process.env[name]]),
  );

/** Runs a shell command line in `cwd`; fails the test with its output unless it exits 0. */
function run(command: string, cwd: string, env: NodeJS.ProcessEnv = {}): { stdout: string; stderr: string } {
  const result = spawnSync('sh', ['-c', command], {
    cwd,
    encoding: 'utf8',
    timeout: 120_000,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, ...networkEnv(), ...env },
  });
  assert.equal(result.status, 0, `${command}\n${result.stdout}\n${result.stderr}`);
  return result;
}

/** The packages under `dir`/node_modules, by name. */
async function installed(dir: string): Promise<string[]> {
  const names = await readdir(join(dir, 'node_modules')).catch(() => [] as string[]);
  return names.filter((name) => !name.startsWith('.')).sort();
}

/** Whether the registry answers, or why not (as a skip reason). */
function registryUnreachable(): string | undefined {
  const ping = spawnSync('npm', ['ping', '--fetch-timeout=10000', '--fetch-retries=0'], {
    encoding: 'utf8',
    timeout: 30_000,
  });
  return ping.status === 0
    ? undefined
    : `the npm registry is not reachable, and the recipes fetch the driver from it: ${ping.stderr.trim().split('\n').at(-1) ?? ''}`;
}

/** Starts `command args` (a server) on the database, creates and lists a pet, and stops it. */
async function serveOnDatabase(command: string, args: string[], cwd: string, url: string): Promise<void> {
  const server = await launchServer(command, [...args, '--port', '0', '--database-url', url], {
    cwd,
    env: { PATH: process.env.PATH, PETSTORE_API_KEYS: TEST_KEY },
  });
  try {
    const created = await request(server.url, 'POST', '/v1/pets', {
      headers: [['content-type', 'application/json']],
      body: '{"name":"Rex","categoryId":1}',
    });
    assert.equal(created.status, 201, created.text);
    assert.equal((await request(server.url, 'GET', '/v1/pets')).status, 200);
    assert.match(server.stdout(), /"msg":"listening",.*"database":"PostgreSQL"/);
  } finally {
    assert.equal(await stopProcess(server), 0, server.stderr());
  }
}

export function driverInstallTests(cluster: () => Cluster): void {
  test('the recipes of postgresql.md add the driver alone to a production install from the packed tarball, which then runs on a database', async (t) => {
    const unreachable = registryUnreachable();
    if (unreachable !== undefined) {
      t.skip(unreachable);
      return;
    }
    const doc = await readFile(join(ROOT, 'docs', 'postgresql.md'), 'utf8');
    for (const recipe of [IN_A_PROJECT, IN_A_CLONE])
      assert.ok(doc.includes(`\n  ${recipe}\n`), `postgresql.md gives the recipe: ${recipe}`);
    const work = await tempDirFor(t, 'petstore-install-');
    // The dist/ this test run built, packed as `npm pack` would.
    const tarball = join(
      work,
      run(`npm pack --ignore-scripts --silent --pack-destination ${work}`, ROOT).stdout.trim(),
    );
    const url = await cluster().createDatabase();
    const quiet = '--no-audit --no-fund';

    // A project of one's own that installed the package from the tarball.
    const project = join(work, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), '{"name":"consumer","private":true}\n');
    run(`npm install ${quiet} --omit=dev ${tarball}`, project);
    assert.deepEqual(await installed(project), ['petstore-api'], 'the package needs nothing else');
    assert.equal(run(`${IN_A_PROJECT} ${quiet}`, project).stderr, '', 'npm warns of nothing');
    assert.deepEqual(await installed(project), ['petstore-api', 'postgres']);
    assert.match(
      run('node_modules/.bin/petstore --help', project).stdout,
      /^ {2}petstore keys create/m,
      'the installed command names itself',
    );
    await serveOnDatabase('node_modules/.bin/petstore', [], project, url);

    // A production tree made from a clone: dist/ and a package.json that lists postgres as a dev package, no node_modules.
    const tree = join(work, 'tree');
    await mkdir(tree);
    run(`tar -xzf ${tarball} -C ${tree} --strip-components=1`, work);
    const manifest = await readFile(join(tree, 'package.json'), 'utf8');
    assert.match(manifest, /"devDependencies": \{[^}]*"postgres"/, 'postgres is a dev package of the tree');
    // npm warned "idealTree Removing devDependencies.postgres" when the recipe made it a production package.
    assert.equal(run(`${IN_A_CLONE} ${quiet}`, tree).stderr, '', 'npm warns of nothing');
    assert.deepEqual(await installed(tree), [], 'no dev package');
    assert.deepEqual(
      await installed(join(tree, 'dist')),
      ['postgres'],
      'only the driver, beside the code that loads it',
    );
    assert.equal(await readFile(join(tree, 'package.json'), 'utf8'), manifest, 'package.json is untouched');
    for (const dir of [tree, join(tree, 'dist')])
      assert.deepEqual(
        (await readdir(dir)).filter((name) => name === 'package-lock.json' || name === 'package.json'),
        dir === tree ? ['package.json'] : [],
        `no lock file or manifest is written in ${dir}`,
      );
    await serveOnDatabase(process.execPath, ['dist/server.js'], tree, url);
  });
}
