/**
 * docs/production.md's commands run as written, in order: each ```sh block, with the system paths
 * moved under a temporary directory, the user switch and ownership left out (the test is one user),
 * and `npm ci` not run (the suite runs on a built tree); then the unit's ExecStart line serves on a
 * socket passed as systemd passes it, and the restore drill restores what it replicated.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { metricValue } from './exposition-parser.js';
import { TEST_KEY, request, tempDirFor, within } from './support.js';
import { scrape } from './metrics-support.js';
import { needsPython, socketLauncher } from './socket-launcher.js';
import { certificate, needsOpenssl } from './tls-support.js';

const ROOT = resolve(__dirname, '../..');
const PAGE = readFileSync(join(ROOT, 'docs/production.md'), 'utf8');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** The page's blocks of one kind, in order. */
const blocks = (kind: string): string[] =>
  [...PAGE.matchAll(new RegExp(`^\`\`\`${kind}\\n([\\s\\S]*?)^\`\`\`$`, 'gm'))].map((m) => m[1] as string);

/** A line of the page as this test runs it: under `root`, as one user. */
function moved(line: string, root: string): string {
  return line
    .replace(/runuser -u petstore -- /g, '')
    .replace(/ -o petstore -g petstore/g, '')
    .replace(/(^|[\s"=])\/(opt|var|etc\/petstore|etc\/prometheus)\b/g, `$1${root}/$2`);
}

function run(script: string, cwd: string, env: NodeJS.ProcessEnv): string {
  const options = { cwd, env: { PATH: process.env.PATH, ...env }, encoding: 'utf8', timeout: 60_000 } as const;
  const done = spawnSync('sh', ['-e', '-c', script], options);
  assert.equal(done.status, 0, `${script}\nstdout: ${done.stdout}\nstderr: ${done.stderr}`);
  return done.stdout;
}

const name = 'docs/production.md: every sh block runs as written; the unit serves on a socket passed as systemd does';
test(name, { ...needsOpenssl, ...needsPython, timeout: 120_000 }, async (t) => {
  const root = await tempDirFor(t, 'petstore-production-');
  const work = join(root, 'work');
  mkdirSync(work);
  // What every system has, under the moved root.
  mkdirSync(join(root, 'var/tmp'), { recursive: true });
  const sh = blocks('sh');
  const [users, install, keys, hook, environment, drill, prometheus, upgrade, backup] = sh;
  assert.equal(sh.length, 9, 'the blocks this test knows, in the order of the page');
  const runBlock = (block: string | undefined, env: NodeJS.ProcessEnv = {}): string =>
    run(
      (block as string)
        .split('\n')
        .map((l) => moved(l, root))
        .join('\n'),
      work,
      env,
    );

  // Step 1; useradd is not run (the test makes no system user).
  runBlock(
    (users as string)
      .split('\n')
      .filter((l) => !l.startsWith('useradd'))
      .join('\n'),
  );
  assert.equal(statSync(join(root, 'var/lib/petstore')).mode & 0o777, 0o700);

  // Step 2: npm pack without its prepare script (a build here would change dist/ under other tests).
  assert.match(install as string, /^npm ci && npm pack$/m);
  execFileSync('npm', ['pack', '--ignore-scripts', '--pack-destination', work], { cwd: ROOT, stdio: 'ignore' });
  assert.equal(runBlock((install as string).replace(/^npm ci && npm pack\n/m, '')), `${VERSION}\n`);

  // Step 3: keys with scopes and a quota, then the list of them.
  const listed = runBlock(keys);
  assert.match(listed, /shop-frontend/);
  assert.match(listed, /importer/);

  // Step 4: certbot's deploy hook, with a renewed lineage of its own.
  const lineage = join(root, 'lineage');
  mkdirSync(lineage);
  const pair = certificate(lineage, 'pair');
  execFileSync('cp', [pair.cert, join(lineage, 'fullchain.pem')]);
  execFileSync('cp', [pair.key, join(lineage, 'privkey.pem')]);
  runBlock(hook, { RENEWED_LINEAGE: lineage });
  assert.equal(statSync(join(root, 'etc/petstore/tls/privkey.pem')).mode & 0o777, 0o600);

  // Step 5: the environment file, then the unit's ExecStart line on a socket held as systemd holds it.
  runBlock(environment);
  assert.equal(statSync(join(root, 'etc/petstore/env')).mode & 0o777, 0o600);
  const unit = blocks('ini')[1] as string;
  const execStart = /^ExecStart=(.*)$/m.exec(unit)?.[1] as string;
  // ProtectSystem=strict leaves the file system read-only but for what ReadWritePaths= lists.
  assert.match(unit, /^ProtectSystem=strict$/m);
  const replicateTo = /--replicate-to (\S+)/.exec(execStart)?.[1];
  assert.deepEqual(/^ReadWritePaths=(.*)$/m.exec(unit)?.[1]?.split(' '), [replicateTo]);
  assert.doesNotMatch(execStart, /--host|--port/, 'the socket unit says where');
  const args = moved(execStart, root)
    .replace('${STATE_DIRECTORY}', join(root, 'var/lib/petstore'))
    .replace('--metrics-port 9464', '--metrics-port 0')
    .split(' ');
  assert.equal(args[0], '/usr/bin/node');
  assert.equal(args[1], join(root, 'opt/petstore/dist/server.js'));
  const launcher = await socketLauncher(t, args.slice(2), { PETSTORE_API_KEYS: TEST_KEY }, args[1]);
  await launcher.start(join(root, 'server.log'));
  const url = `http://127.0.0.1:${launcher.port}`;
  const headers: Array<[string, string]> = [['content-type', 'application/json']];
  const created = await request(url, 'POST', '/v1/pets', { body: '{"name":"Rex","categoryId":1}', headers });
  assert.equal(created.status, 201, created.text);
  assert.equal((await request(url, 'GET', '/v1/pets')).status, 200);
  const metricsUrl = /"metrics":"([^"]+)"/.exec(readFileSync(join(root, 'server.log'), 'utf8'))?.[1] as string;
  const shipped = async (): Promise<void> => {
    while (metricValue((await scrape(metricsUrl)).families, 'petstore_replication_lag_seconds') !== 0) {
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  await within(shipped(), 10_000, 'the create is replicated');
  assert.equal(await launcher.stop(), 0);

  // Step 6: the restore drill.
  const drilled = runBlock(drill);
  assert.match(drilled, /^restored 1 pets? /m);

  // Step 7: the alert rules installed where Prometheus reads them, and checked there when promtool is here.
  runBlock(prometheus);
  const rules = join(root, 'etc/prometheus/petstore-alerts.yml');
  const promtool = spawnSync('promtool', ['check', 'rules', rules], { encoding: 'utf8' });
  if (promtool.error === undefined) assert.equal(promtool.status, 0, promtool.stdout + promtool.stderr);

  // Step 8: an upgrade (to the same version here), and the backup before it.
  assert.equal(runBlock(upgrade), `${VERSION}\n`);
  runBlock(backup);
  assert.ok(statSync(join(root, 'var/backups/petstore-before-upgrade/pets.json')).isFile());
});
