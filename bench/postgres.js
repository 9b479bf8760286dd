/**
 * `node bench/run.js --postgres`: the PostgreSQL store beside the file store. Each round starts from
 * the same 1,000 seeded pets: the file store in a copy of the seed directory, the database as a new
 * database on a throwaway cluster (Debian's postgresql, on the same filesystem as the data
 * directories, fsync and synchronous_commit on) filled by `migrate`. Measured: durable creates/s at 1
 * and 16 connections, GET /v1/pets?limit=20 and GET /v1/pets/500 at 10 connections, through one
 * instance (reading from its copy in memory, and with --database-reads on) and through three
 * instances on one database (the connections split between them, one autocannon each, req/s
 * summed). Medians over rounds. Then start-up and memory at BENCH_PG_SCALE pets: the file store
 * against an instance filling its copy from the database (the same pets, put there by `migrate`).
 *
 * Environment: BENCH_ROUNDS (3), BENCH_SECONDS (5), BENCH_WARMUP (1), BENCH_PG_SCALE (1,000,000), BENCH_TMPDIR;
 * BENCH_PG_ONLY=startup measures start-up and memory alone, BENCH_PG_ONLY=lag the lag across two
 * instances under concurrent creates alone (bench/postgres-lag.js), each into a section of its own
 * (postgres-startup, postgres-lag), which the whole run writes too.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import {
  envNumber,
  fmt,
  get,
  machine,
  measure,
  median,
  memory,
  removeDir,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
  ROOT,
  CREATE as create,
  LIST as list,
} from './harness.js';
import { postgresBin, startCluster } from './cluster.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 3, 1);
const SECONDS = envNumber('BENCH_SECONDS', 5, 1);
const WARMUP = envNumber('BENCH_WARMUP', 1, 0);
const SEED_PETS = 1000;
const SCALE_PETS = envNumber('BENCH_PG_SCALE', 1_000_000, 1);
const ONLY = process.env.BENCH_PG_ONLY;
if (ONLY !== undefined && ONLY !== 'startup' && ONLY !== 'lag')
  throw new Error(`BENCH_PG_ONLY is startup or lag, not ${ONLY}`);
const progress = (text) => process.stderr.write(`${text}\n`);

// Each create with a key of its own: what a client that always sends Idempotency-Key costs.
let keys = 0;
const createKeyed = { ...create, headers: () => ({ 'idempotency-key': `"bench-key-${++keys}"` }) };
const getPet = { method: 'GET', path: '/v1/pets/500', expect: 200 };

/**
 * Milliseconds from `since` until /readyz answers 200 (a PostgreSQL instance's copy is filled by then),
 * and the longest a /readyz took meanwhile: asked every millisecond, it waits at most for the turn
 * the server is in, so its longest answer bounds the fill's longest turn from outside.
 */
async function untilReady(server, since) {
  let longest = 0;
  for (;;) {
    const asked = performance.now();
    const { status } = await get(server.origin, '/readyz', {});
    longest = Math.max(longest, performance.now() - asked);
    if (status === 200) return { ms: performance.now() - since, longest };
    await sleep(1);
  }
}

/** `node dist/server.js migrate`: the seed's pets into the database, as an operator would. */
function migrate(dataDir, url) {
  const result = spawnSync(
    process.execPath,
    [join(ROOT, 'dist/server.js'), 'migrate', '--data-dir', dataDir, '--database-url', url],
    { encoding: 'utf8' },
  );
  if (result.status !== 0) throw new Error(`migrate failed: ${result.stderr}`);
}

/** `migrate` from a fresh data directory of `snapshot`'s pets (migrate leaves the directory changed). */
function migrateSeed(snapshot, url) {
  const dir = tempDir();
  try {
    seedDirectory(dir, snapshot);
    migrate(dir, url);
  } finally {
    removeDir(dir);
  }
}

/** `workload` over `connections` split between `targets` at the same time; req/s summed, latencies of the busiest. */
async function measureAll(targets, workload, connections) {
  const shares = targets.map(
    (_, i) => Math.floor(connections / targets.length) + (i < connections % targets.length ? 1 : 0),
  );
  const results = await Promise.all(
    targets.map((t, i) => measure(t, workload, { seconds: SECONDS, connections: shares[i] })),
  );
  return {
    rps: results.reduce((sum, r) => sum + r.rps, 0),
    p50: Math.max(...results.map((r) => r.p50)),
    p99: Math.max(...results.map((r) => r.p99)),
    errors: results.reduce((sum, r) => sum + r.errors, 0),
  };
}

const SETUPS = ['file', 'pg1', 'pgdb', 'pg3'];
const LOADS = {
  post1: [create, 1],
  post16: [create, 16],
  post16key: [createKeyed, 16],
  list: [list, 10],
  get: [getPet, 10],
};

export async function postgresMode() {
  const bin = postgresBin();
  if (bin === undefined) throw new Error('PostgreSQL is not installed: apt-get install postgresql');
  const seedDir = tempDir();
  const seed = join(seedDir, 'snapshot.json');
  writeSnapshot(seed, SEED_PETS);
  const cluster = await startCluster(bin);
  const results = Object.fromEntries(
    SETUPS.map((s) => [s, Object.fromEntries(Object.keys(LOADS).map((k) => [k, []]))]),
  );
  let scale = [];
  let lag = [];
  try {
    for (let r = 0; r < (ONLY === undefined ? ROUNDS : 0); r++) {
      progress(`postgres round ${r + 1}/${ROUNDS}`);
      for (const setup of r % 2 === 0 ? SETUPS : [...SETUPS].reverse())
        await measureSetup(cluster, seed, setup, r, results[setup]);
    }
    if (ONLY !== 'startup') {
      progress('lag across two instances under concurrent creates');
      lag = await (await import('./postgres-lag.js')).lagAcrossInstances(cluster);
    }
    if (ONLY !== 'lag') {
      progress(`start-up and memory at ${fmt.int(SCALE_PETS)} pets`);
      scale = await startupAtScale(cluster);
    }
  } finally {
    cluster.destroy();
    removeDir(seedDir);
  }
  const m = machine();
  writeInstanceSections(m, scale, lag);
  if (ONLY !== undefined) return;
  const markdown = postgresMarkdown(m, results);
  writeSection(join(ROOT, 'bench/results.md'), 'postgres', markdown);
  console.log(markdown);
}

/** One round of `setup`: its servers started (on a database of its own, filled by migrate), every load measured. */
async function measureSetup(cluster, seed, setup, r, results) {
  const dirs = [];
  const servers = [];
  try {
    let serverArgs = [];
    if (setup !== 'file') {
      const name = `bench_${r}_${setup}`;
      cluster.createDatabase(name);
      serverArgs = ['--database-url', cluster.url(name), ...(setup === 'pgdb' ? ['--database-reads', 'on'] : [])];
      migrateSeed(seed, cluster.url(name));
    }
    for (let i = 0; i < (setup === 'pg3' ? 3 : 1); i++) {
      const dir = tempDir();
      dirs.push(dir);
      if (setup === 'file') seedDirectory(dir, seed);
      servers.push(await start('server', { dataDir: dir, serverArgs }));
    }
    for (const server of servers) await untilReady(server, 0);
    for (const [key, [workload, connections]] of Object.entries(LOADS)) {
      if (setup === 'pg3' && key === 'post1') continue; // one connection cannot be split
      if (setup === 'pgdb' && key.startsWith('post')) continue; // creates are the same with either reads
      if (WARMUP > 0) await measureAll(servers, workload, connections).catch(() => undefined);
      const m = await measureAll(servers, workload, connections);
      results[key].push(m);
      progress(
        `  ${setup.padEnd(4)} ${key.padEnd(6)} ${fmt.int(m.rps).padStart(7)}/s  p50 ${fmt.ms(m.p50)} ms  p99 ${fmt.ms(m.p99)} ms  errors ${m.errors}`,
      );
    }
  } finally {
    for (const s of servers) await stop(s);
    for (const d of dirs) removeDir(d);
  }
}

/** The sections of start-up and memory at scale, and of the lag across instances, each when it was measured. */
function writeInstanceSections(m, scale, lag) {
  const stamp = `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data and cluster on ${m.dataFs} · load average ${m.load} at the end`;
  for (const [name, title, lines] of [
    ['postgres-startup', 'start-up and memory', scale],
    ['postgres-lag', 'lag across instances', lag],
  ]) {
    if (lines.length === 0) continue;
    const markdown = [
      `## PostgreSQL instances: ${title} (\`BENCH_PG_ONLY=${name.slice('postgres-'.length)}\` or the whole run)`,
      '',
      stamp,
      '',
      ...lines,
    ].join('\n');
    writeSection(join(ROOT, 'bench/results.md'), name, markdown);
    console.log(markdown);
  }
}

/** The main section: every load on every setup, medians with (min–max), p50 and p99. */
function postgresMarkdown(m, results) {
  const cell = (setup, key) => {
    const rounds = results[setup][key];
    if (rounds.length === 0) return ['', '', ''];
    const rps = rounds.map((m) => m.rps);
    return [
      `${fmt.int(median(rps))} (${fmt.int(Math.min(...rps))}–${fmt.int(Math.max(...rps))})`,
      fmt.ms(median(rounds.map((m) => m.p50))),
      fmt.ms(median(rounds.map((m) => m.p99))),
    ];
  };
  const errors = (key) => SETUPS.reduce((sum, s) => sum + results[s][key].reduce((n, m) => n + m.errors, 0), 0);
  const row = (label, key) => `| ${label} | ${SETUPS.flatMap((s) => cell(s, key)).join(' | ')} | ${errors(key)} |`;
  const ratio = (key, setup) =>
    `${(median(results[setup][key].map((m) => m.rps)) / median(results.file[key].map((m) => m.rps))).toFixed(2)}×`;
  return [
    '## PostgreSQL store beside the file store',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data and cluster on ${m.dataFs} · load average ${m.load} at the end`,
    `${ROUNDS} rounds × ${SECONDS} s per measurement after ${WARMUP} s warm-up; every round starts from ${fmt.int(SEED_PETS)} pets (the database filled by \`migrate\`). ` +
      "PostgreSQL: a throwaway cluster of Debian's package with its defaults (fsync and synchronous_commit on), on the same machine as the servers and autocannon. " +
      'Three instances: the connections split between them, one autocannon each, req/s summed, latency of the slowest. Medians over rounds, (min–max) beside req/s.',
    '',
    '| Measure | File store | p50 ms | p99 ms | PostgreSQL, 1 instance (copy in memory) | p50 ms | p99 ms | PostgreSQL, 1 instance, `--database-reads on` | p50 ms | p99 ms | PostgreSQL, 3 instances | p50 ms | p99 ms | Errors |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|',
    row('POST /v1/pets (durable, 201), 1 connection, creates/s', 'post1'),
    row('POST /v1/pets (durable, 201), 16 connections, creates/s', 'post16'),
    row('POST /v1/pets with an Idempotency-Key of its own (durable, 201), 16 connections, creates/s', 'post16key'),
    row('GET /v1/pets?limit=20, 10 connections, req/s', 'list'),
    row('GET /v1/pets/500, 10 connections, req/s', 'get'),
    '',
    'Errors: responses other than 201/200, plus socket errors, summed over rounds and setups.',
    '',
    `Reads against the file store's req/s, same run (medians): list ${ratio('list', 'pg1')} from the copy, ${ratio('list', 'pgdb')} from the database; ` +
      `getPet ${ratio('get', 'pg1')} from the copy, ${ratio('get', 'pgdb')} from the database.`,
    '',
    'Start-up and memory at a million pets, and the lag across instances: the sections after this one.',
  ].join('\n');
}

/**
 * Start-up and memory at SCALE_PETS pets, ROUNDS spawns each, taking turns: the file store on a seeded
 * directory, and one instance on a database holding the same pets (by `migrate`), filling its copy
 * and with --database-reads on. Start-up: spawn → /readyz 200. RSS: VmRSS 1 s after that.
 */
async function startupAtScale(cluster) {
  const seed = tempDir();
  const snapshot = join(seed, 'snapshot.json');
  writeSnapshot(snapshot, SCALE_PETS);
  const name = 'bench_scale';
  cluster.createDatabase(name);
  migrateSeed(snapshot, cluster.url(name));
  // As autovacuum would have left a table in use, so that whether its first pass over the million
  // new rows falls among the spawns does not vary (bench/results.md, "The copy's fill and memory").
  cluster.vacuum(name);
  const setups = {
    file: () => ({
      dir: (() => {
        const d = tempDir();
        seedDirectory(d, snapshot);
        return d;
      })(),
      serverArgs: [],
    }),
    copy: () => ({ dir: tempDir(), serverArgs: ['--database-url', cluster.url(name)] }),
    reads: () => ({ dir: tempDir(), serverArgs: ['--database-url', cluster.url(name), '--database-reads', 'on'] }),
  };
  const got = { file: [], copy: [], reads: [] };
  try {
    for (let r = 0; r < ROUNDS; r++) {
      for (const setup of r % 2 === 0 ? Object.keys(setups) : Object.keys(setups).reverse()) {
        const { dir, serverArgs } = setups[setup]();
        const t0 = performance.now();
        const server = await start('server', { dataDir: dir, serverArgs });
        const { ms, longest } = await untilReady(server, t0);
        await sleep(1000);
        const { rss } = memory(server.pid);
        await stop(server);
        removeDir(dir);
        got[setup].push({ ms, rss, longest });
        progress(
          `  ${setup.padEnd(5)} start-up ${fmt.int(ms)} ms  RSS ${fmt.int(rss / 1024)} MB  longest /readyz ${fmt.ms(longest)} ms`,
        );
      }
    }
  } finally {
    removeDir(seed);
  }
  const ms = (s) => median(got[s].map((g) => g.ms));
  const mb = (s) => median(got[s].map((g) => g.rss)) / 1024;
  const perPet = (s, base) => ((mb(s) - mb(base)) * 1024 * 1024) / SCALE_PETS;
  return [
    `### Start-up and memory at ${fmt.int(SCALE_PETS)} pets`,
    '',
    `${ROUNDS} spawns each, taking turns; start-up is spawn → \`/readyz\` 200 (the copy filled), RSS is VmRSS 1 s after. ` +
      "The copy's memory per pet is its RSS minus that of an instance on the same database with `--database-reads on`; the file store's, its RSS minus that same instance's (which holds no pet). Medians.",
    '',
    '| Measure | File store | PostgreSQL, copy in memory | PostgreSQL, `--database-reads on` | copy ÷ file store |',
    '|---|--:|--:|--:|--:|',
    `| Start-up, spawn → /readyz 200, ms | ${fmt.int(ms('file'))} | ${fmt.int(ms('copy'))} | ${fmt.int(ms('reads'))} | ${(ms('copy') / ms('file')).toFixed(2)}× |`,
    `| RSS, MB | ${fmt.int(mb('file'))} | ${fmt.int(mb('copy'))} | ${fmt.int(mb('reads'))} | ${(mb('copy') / mb('file')).toFixed(2)}× |`,
    `| Memory per pet, bytes | ${fmt.int(perPet('file', 'reads'))} | ${fmt.int(perPet('copy', 'reads'))} | — | ${(perPet('copy', 'reads') / perPet('file', 'reads')).toFixed(2)}× |`,
    '',
    // The file store listens only once its pets are loaded: there is no /readyz to ask during its load.
    `While the copy was filled, a \`/readyz\` asked every millisecond took at most ${fmt.ms(Math.max(...got.copy.map((g) => g.longest)))} ms ` +
      `(median of the spawns' longest: ${fmt.ms(median(got.copy.map((g) => g.longest)))} ms): the fill's longest turn of the event loop is at most that.`,
  ];
}
