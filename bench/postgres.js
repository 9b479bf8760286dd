/**
 * `node bench/run.js --postgres`: the PostgreSQL store beside the file store. Each round starts from
 * the same 1,000 seeded pets: the file store in a copy of the seed directory, the database as a new
 * database on a throwaway cluster (Debian's postgresql, on the same filesystem as the data
 * directories, fsync and synchronous_commit on) filled by `migrate`. Measured: durable creates/s at 1
 * and 16 connections and GET /v1/pets?limit=20 at 10 connections, through one instance and through
 * three instances on one database (the connections split between them, one autocannon each, req/s
 * summed). Medians over rounds.
 *
 * Environment: BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_TMPDIR.
 */
import { spawnSync } from 'node:child_process';
import { chownSync, copyFileSync, existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { envNumber, fmt, machine, measure, median, removeDir, start, stop, tempDir, writeSection, ROOT } from './harness.js';
import { writeSnapshot } from './pets.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 3, 1);
const SECONDS = envNumber('BENCH_SECONDS', 5, 1);
const WARMUP = envNumber('BENCH_WARMUP', 1, 0);
const SEED_PETS = 1000;
const progress = (text) => process.stderr.write(`${text}\n`);

let created = 0;
const create = { method: 'POST', path: '/v1/pets', body: () => `{"name":"bench-${++created}","categoryId":7,"status":"available"}`, expect: 201 };
// Each create with a key of its own: what a client that always sends Idempotency-Key costs.
let keys = 0;
const createKeyed = { ...create, headers: () => ({ 'idempotency-key': `"bench-key-${++keys}"` }) };
const list = { method: 'GET', path: '/v1/pets?limit=20', expect: 200 };

export function postgresBin() {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => /^[0-9]+$/.test(v)).sort((a, b) => b - a);
  return versions.map((v) => join(root, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
}

function postgresUser() {
  if (process.getuid() !== 0) return {};
  const line = readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('postgres:'));
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

const freePort = () => new Promise((resolve, reject) => {
  const server = createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});

/** A throwaway cluster: { url(name), createDatabase(name), destroy() }. */
export async function startCluster(bin) {
  const dir = tempDir('petstore-bench-pg-');
  const owner = postgresUser();
  if (owner.uid !== undefined) chownSync(dir, owner.uid, owner.gid);
  const data = join(dir, 'data');
  const port = await freePort();
  const run = (tool, args) => {
    const result = spawnSync(join(bin, tool), args, { cwd: dir, encoding: 'utf8', ...owner });
    if (result.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed:\n${result.stdout}${result.stderr}`);
  };
  const destroy = () => {
    spawnSync(join(bin, 'pg_ctl'), ['-D', data, '-m', 'immediate', 'stop'], { cwd: dir, stdio: 'ignore', ...owner });
    removeDir(dir);
  };
  process.on('exit', destroy);
  run('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-w', '-o', `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c max_connections=100`, 'start']);
  return {
    url: (name) => `postgres://postgres@127.0.0.1:${port}/${name}`,
    createDatabase: (name) => run('createdb', ['-h', '127.0.0.1', '-p', String(port), '-U', 'postgres', name]),
    destroy,
  };
}

/** `node dist/server.js migrate`: the seed's pets into the database, as an operator would. */
function migrate(dataDir, url) {
  const result = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), 'migrate', '--data-dir', dataDir, '--database-url', url], { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`migrate failed: ${result.stderr}`);
}

/** `workload` over `connections` split between `targets` at the same time; req/s summed, latencies of the busiest. */
async function measureAll(targets, workload, connections) {
  const shares = targets.map((_, i) => Math.floor(connections / targets.length) + (i < connections % targets.length ? 1 : 0));
  const results = await Promise.all(targets.map((t, i) => measure(t, workload, { seconds: SECONDS, connections: shares[i] })));
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50)),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  };
}

export async function postgresMode() {
  const bin = postgresBin();
  if (bin === undefined) throw new Error('PostgreSQL is not installed: apt-get install postgresql');
  const seedDir = tempDir();
  writeSnapshot(join(seedDir, 'pets.json'), SEED_PETS);
  writeFileSync(join(seedDir, 'pets-journal.1.jsonl'), '', { mode: 0o600 }); // the journal pets.json names
  const cluster = await startCluster(bin);
  const setups = ['file', 'pg1', 'pg3'];
  const loads = { post1: [create, 1], post16: [create, 16], post16key: [createKeyed, 16], list: [list, 10] };
  const results = Object.fromEntries(setups.map((s) => [s, Object.fromEntries(Object.keys(loads).map((k) => [k, []]))]));
  try {
    for (let r = 0; r < ROUNDS; r++) {
      progress(`postgres round ${r + 1}/${ROUNDS}`);
      for (const setup of r % 2 === 0 ? setups : [...setups].reverse()) {
        const dirs = [];
        const servers = [];
        try {
          let serverArgs = [];
          if (setup !== 'file') {
            const name = `bench_${r}_${setup}`;
            cluster.createDatabase(name);
            serverArgs = ['--database-url', cluster.url(name)];
            migrate(seedDir, cluster.url(name));
          }
          for (let i = 0; i < (setup === 'pg3' ? 3 : 1); i++) {
            const dir = tempDir();
            dirs.push(dir);
            if (setup === 'file') for (const file of ['pets.json', 'pets-journal.1.jsonl']) copyFileSync(join(seedDir, file), join(dir, file));
            servers.push(await start('server', { dataDir: dir, serverArgs }));
          }
          for (const [key, [workload, connections]] of Object.entries(loads)) {
            if (setup === 'pg3' && key === 'post1') continue; // one connection cannot be split
            if (WARMUP > 0) await measureAll(servers, workload, connections).catch(() => undefined);
            const m = await measureAll(servers, workload, connections);
            results[setup][key].push(m);
            progress(`  ${setup.padEnd(4)} ${key.padEnd(6)} ${fmt.int(m.rps).padStart(7)}/s  p50 ${fmt.ms(m.p50)} ms  p99 ${fmt.ms(m.p99)} ms  errors ${m.errors}`);
          }
        } finally {
          for (const s of servers) await stop(s);
          for (const d of dirs) removeDir(d);
        }
      }
    }
  } finally {
    cluster.destroy();
    removeDir(seedDir);
  }

  const cell = (setup, key) => {
    const rounds = results[setup][key];
    if (rounds.length === 0) return ['', '', ''];
    const rps = rounds.map((m) => m.rps);
    return [`${fmt.int(median(rps))} (${fmt.int(Math.min(...rps))}–${fmt.int(Math.max(...rps))})`, fmt.ms(median(rounds.map((m) => m.p50))), fmt.ms(median(rounds.map((m) => m.p99)))];
  };
  const errors = (key) => setups.reduce((sum, s) => sum + results[s][key].reduce((n, m) => n + m.errors, 0), 0);
  const row = (label, key) => `| ${label} | ${setups.flatMap((s) => cell(s, key)).join(' | ')} | ${errors(key)} |`;
  const m = machine();
  const markdown = [
    '## PostgreSQL store beside the file store',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data and cluster on ${m.dataFs} · load average ${m.load} at the end`,
    `${ROUNDS} rounds × ${SECONDS} s per measurement after ${WARMUP} s warm-up; every round starts from ${fmt.int(SEED_PETS)} pets (the database filled by \`migrate\`). ` +
      'PostgreSQL: a throwaway cluster of Debian\'s package with its defaults (fsync and synchronous_commit on), on the same machine as the servers and autocannon. ' +
      'Three instances: the connections split between them, one autocannon each, req/s summed, latency of the slowest. Medians over rounds, (min–max) beside req/s.',
    '',
    '| Measure | File store | p50 ms | p99 ms | PostgreSQL, 1 instance | p50 ms | p99 ms | PostgreSQL, 3 instances | p50 ms | p99 ms | Errors |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    row('POST /v1/pets (durable, 201), 1 connection, creates/s', 'post1'),
    row('POST /v1/pets (durable, 201), 16 connections, creates/s', 'post16'),
    row('POST /v1/pets with an Idempotency-Key of its own (durable, 201), 16 connections, creates/s', 'post16key'),
    row('GET /v1/pets?limit=20, 10 connections, req/s', 'list'),
    '',
    'Errors: responses other than 201/200, plus socket errors, summed over rounds and setups.',
  ].join('\n');
  writeSection(join(ROOT, 'bench/results.md'), 'postgres', markdown);
  console.log(markdown);
}
