/**
 * The benchmark. `npm run bench` builds, then runs this; `node bench/run.js --scale` (or BENCH_SCALE=1)
 * measures the store at 1,000 / 100,000 / 1,000,000 pets instead; `node bench/run.js --postgres` the
 * PostgreSQL store beside the file store (see bench/postgres.js); `--keys` what remembered
 * Idempotency-Keys cost in memory (see bench/keys.js); `--feed` the latency of waiting requests and
 * streams, and what gzip costs (see bench/feed.js); `--instructions` what a quota and metrics cost in
 * instructions per request, under callgrind (see bench/instructions.js); `--flood` Idempotency-Keys
 * made to collide under the table's old hash against random ones (see bench/flood.js); `--slots`
 * whether clients that send no request can take the connection slots (see bench/slots.js); `--unread`
 * whether clients that never read their answers can (see bench/unread.js);
 * `--restart` restarts under load on a socket held as systemd holds it (bench/restart.js);
 * `--replication` creates and reads with continuous replication on and off (see
 * bench/replication.js); `--webhooks` creates and reads with ten webhook subscriptions and without, and
 * the delay from a 201 to the receiver (see bench/webhooks.js); `--wrk` the server against the lean floor and Fastify 5 (fetched into a
 * cache outside the repository) with wrk as the load generator, CPU per answer beside req/s (see
 * bench/wrk.js). Results are printed and written to
 * bench/results.md (each mode replaces only its own section).
 *
 * Main mode: the built server on a temp data dir seeded with 1,000 pets (half "sold"), and the floor
 * (bench/floor.js, the leanest node:http server that answers the same: auth, limit and status, JSON), both fresh in every round,
 * rounds alternating server/floor. Beside them the floor once more with the response headers the
 * service must send (decisions.md, issues 5 and 6), for the GETs only: what those headers alone
 * cost; the server once more under a per-key quota it never reaches (issue 24), so that every
 * GET is counted and carries RateLimit-Policy and RateLimit: what a quota costs; and the server once
 * more with its metrics on (--metrics-port), for the list only: what metrics cost (issue 22). Every
 * figure is the median over rounds; p99 sits beside it.
 *
 * Environment: BENCH_ROUNDS (5; 3 in scale mode), BENCH_SECONDS per measurement (5; the GETs in
 * BENCH_SLICES turns of equal length, 5, the processes compared taking turns), BENCH_WARMUP seconds (1),
 * BENCH_CONNECTIONS (10), BENCH_SPAWNS for cold start (11; 5 in scale mode), BENCH_SCALE_SIZES
 * (1000,100000,1000000), BENCH_TMPDIR (os.tmpdir(); fsync figures depend on its filesystem).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  ROOT,
  envNumber,
  fdatasyncProbe,
  fmt,
  get,
  machine,
  measure,
  measureInterleaved,
  median,
  memory,
  turnSeconds,
  removeDir,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
  CREATE as create,
  LIST as list,
} from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

/** The modes besides the main one: each flag, its module and function, and what it measures (for --help). */
const MODES = {
  '--scale': [undefined, 'scaleMode', 'the store at 1,000 / 100,000 / 1,000,000 pets (or BENCH_SCALE=1)'],
  '--postgres': ['./postgres.js', 'postgresMode', 'the PostgreSQL store beside the file store'],
  '--keys': ['./keys.js', 'keysMode', 'what remembered Idempotency-Keys cost in memory'],
  '--feed': ['./feed.js', 'feedMode', 'the latency of waiting requests and streams, and what gzip costs'],
  '--instructions': ['./instructions.js', 'instructionsMode', 'instructions per request under callgrind'],
  '--flood': ['./flood.js', 'floodMode', 'Idempotency-Keys made to collide against random ones'],
  '--slots': ['./slots.js', 'slotsMode', 'whether clients that send no request can take the connection slots'],
  '--unread': ['./unread.js', 'unreadMode', 'whether clients that never read their answers can'],
  '--restart': ['./restart.js', 'restartMode', 'restarts under load on a socket held as systemd holds it'],
  '--replication': ['./replication.js', 'replicationMode', 'creates and reads with replication on and off'],
  '--webhooks': ['./webhooks.js', 'webhooksMode', 'creates and reads with ten webhook subscriptions and without'],
  '--wrk': ['./wrk.js', 'wrkMode', 'the server against the floor and Fastify 5 under wrk'],
};
const USAGE = [
  'usage: node bench/run.js [mode]   (after npm run build; results printed and written to bench/results.md)',
  '',
  '  (none)          the server against the lean floor: lists, one pet, creates, cold start, memory',
  ...Object.entries(MODES).map(([flag, [, , what]]) => `  ${flag.padEnd(15)} ${what}`),
  '',
  'Environment: BENCH_ROUNDS, BENCH_SECONDS, BENCH_SLICES, BENCH_WARMUP, BENCH_CONNECTIONS, BENCH_SPAWNS,',
  "BENCH_SCALE_SIZES, BENCH_TMPDIR; each mode's own in the header of its module.",
].join('\n');
const flags = process.argv.slice(2);
if (flags.includes('--help') || flags.includes('-h')) {
  console.log(USAGE);
  process.exit(0);
}
// A typo must not start the default run, which takes minutes.
const unknown = flags.filter((flag) => !(flag in MODES));
if (unknown.length > 0 || flags.length > 1) {
  console.error(`${unknown.length > 0 ? `unknown option ${unknown[0]}` : 'one mode at a time'}\n\n${USAGE}`);
  process.exit(2);
}
const SCALE = flags[0] === '--scale' || process.env.BENCH_SCALE === '1';
const ROUNDS = envNumber('BENCH_ROUNDS', SCALE ? 3 : 5, 1); // the machine is noisy: more rounds, steadier medians
const SECONDS = envNumber('BENCH_SECONDS', 5, 1);
const WARMUP = envNumber('BENCH_WARMUP', 1, 0);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10, 1);
const SPAWNS = envNumber('BENCH_SPAWNS', SCALE ? 5 : 11, 1);
const SLICES = envNumber('BENCH_SLICES', 5, 1);
const TURN = turnSeconds(SECONDS, SLICES); // checked before anything starts
// An empty store first: the baseline that start-up and memory per pet are measured against.
const SIZES = [0, ...(process.env.BENCH_SCALE_SIZES ?? '1000,100000,1000000').split(',').map(Number)];
const RESULTS = join(ROOT, 'bench/results.md');
const SEED_PETS = 1000;
// A quota no measurement reaches: each answer counted and carrying the RateLimit fields, none refused.
const QUOTA_ARGS = ['--rate-limit', '1000000000/3600'];
const RATE_LIMIT_FIELD = /^"per-key";r=[0-9]+;t=[0-9]+$/;

const sold = (limit) => ({ method: 'GET', path: `/v1/pets?status=sold&limit=${limit}`, expect: 200 });
const one = (count) => ({
  method: 'GET',
  path: () => `/v1/pets/${1 + Math.floor(Math.random() * count)}`,
  expect: 200,
});

const progress = (text) => process.stderr.write(`${text}\n`);
const opts = (connections = CONNECTIONS, seconds = SECONDS) => ({ seconds, connections });

function seededDir(snapshot) {
  const dir = tempDir();
  seedDirectory(dir, snapshot);
  return dir;
}

/** The floors must answer what the server answers, or the comparison means nothing. */
async function sanity(server, floor, headers, quota, metered) {
  const problems = [];
  const [plain, measured] = await Promise.all([
    get(server.origin, '/v1/pets?limit=20'),
    get(metered.origin, '/v1/pets?limit=20'),
  ]);
  if (measured.status !== 200 || measured.body !== plain.body)
    problems.push(`the server with metrics answers ${measured.status}, not what the server answers`);
  const scraped = await get(new URL(metered.metricsUrl).origin, '/metrics', {});
  if (
    scraped.status !== 200 ||
    !/^http_server_request_duration_seconds_count\{http_request_method="GET",http_route="\/v1\/pets",http_response_status_code="200"\} [1-9]/m.test(
      scraped.body,
    )
  ) {
    problems.push(`the server with metrics does not count its lists: ${scraped.status}`);
  }
  for (const path of ['/v1/pets?limit=20', '/v1/pets/7']) {
    const [s, q] = await Promise.all([get(server.origin, path), get(quota.origin, path)]);
    if (q.status !== 200 || q.body !== s.body)
      problems.push(`${path}: the server under a quota answers ${q.status}, not what the server answers`);
    if (!RATE_LIMIT_FIELD.test(q.headers.ratelimit ?? '') || s.headers.ratelimit !== undefined)
      problems.push(`${path}: RateLimit is "${q.headers.ratelimit}" under a quota, "${s.headers.ratelimit}" without`);
  }
  for (const path of ['/v1/pets?limit=20', '/v1/pets/7']) {
    const [s, f, h] = await Promise.all([get(server.origin, path), get(floor.origin, path), get(headers.origin, path)]);
    if (s.status !== 200 || f.status !== 200 || s.body !== f.body)
      problems.push(`${path}: server ${s.status} and floor ${f.status} bodies differ`);
    if (s.headers['content-type'] !== 'application/json')
      problems.push(`${path}: server content-type ${s.headers['content-type']}`);
    // The same header names, and the same values but for the ones that change with every answer.
    const shown = (r) =>
      Object.entries(r.headers)
        .filter(([n]) => n !== 'date')
        .map(([n, v]) => (n === 'x-request-id' ? n : `${n}: ${v}`))
        .sort()
        .join('; ');
    if (h.body !== s.body || shown(h) !== shown(s))
      problems.push(`${path}: the floor with headers sends ${shown(h)}; the server ${shown(s)}`);
  }
  for (const t of [server, floor, headers]) {
    for (const headers of [{}, { authorization: 'Bearer wrong-key' }]) {
      const r = await get(t.origin, '/v1/pets', headers);
      if (r.status !== 401) problems.push(`${t.kind} answered ${r.status} without a valid key`);
    }
  }
  const page = JSON.parse((await get(server.origin, '/v1/pets?status=sold&limit=100')).body);
  if (page.length !== 100 || page.some((p) => p.status !== 'sold'))
    problems.push('status=sold&limit=100 is not 100 sold pets');
  for (const p of problems) progress(`WARNING: ${p}`);
  return problems;
}

/**
 * Counts the server's fdatasync/fsync calls per acknowledged create with `strace -c`, in a pass of
 * its own (tracing slows every traced call, so no throughput is taken from it). Undefined without strace.
 */
async function fsyncsPerCreate(seed) {
  if (process.env.BENCH_STRACE === '0' || spawnSync('strace', ['-V']).status !== 0) return undefined;
  const dir = seededDir(seed);
  const server = await start('server', { dataDir: dir });
  try {
    const counts = {};
    for (const connections of [1, 16]) {
      const tracer = spawn('strace', ['-f', '-c', '-e', 'trace=fdatasync,fsync', '-p', String(server.pid)], {
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let report = '';
      tracer.stderr.setEncoding('utf8');
      tracer.stderr.on('data', (text) => (report += text));
      const done = new Promise((resolve) => tracer.once('exit', resolve));
      await sleep(500); // attach to every thread before the first request
      const m = await measure(server, create, opts(connections, 2));
      await sleep(200);
      tracer.kill('SIGINT');
      await done;
      let syncs = 0;
      for (const [, calls] of report.matchAll(
        /^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(?:fdatasync|fsync)\s*$/gm,
      ))
        syncs += Number(calls);
      counts[connections] = { syncs, creates: m.count };
      progress(`  strace: ${connections} connection(s): ${syncs} fdatasync/fsync for ${m.count} creates`);
    }
    return counts;
  } finally {
    await stop(server);
    removeDir(dir);
  }
}

async function mainMode() {
  const seedDir = tempDir();
  const seed = join(seedDir, 'pets.json');
  writeSnapshot(seed, SEED_PETS);
  const measured = await measureRounds(seed);
  const cold = await coldStarts();
  const fsyncRate = fdatasyncProbe(seedDir, 2);
  const traced = await fsyncsPerCreate(seed);
  removeDir(seedDir);
  const markdown = mainMarkdown({ ...measured, cold, fsyncRate, traced });
  writeSection(RESULTS, 'main', markdown);
  console.log(markdown);
}

/** ROUNDS rounds of the server, its variants and the floors on copies of `seed`; the sanity check's problems. */
async function measureRounds(seed) {
  const keys = ['list', 'one', 'sold', 'post1', 'post16'];
  const rounds = Object.fromEntries(
    keys.map((k) => [k, { server: [], floor: [], headers: [], quota: [], metrics: [] }]),
  );
  const idle = { server: [], floor: [] };
  const peak = { server: [], floor: [] };
  let problems = [];
  for (let r = 0; r < ROUNDS; r++) {
    const round = await measureRound(r, seed, rounds);
    idle.server.push(round.idle.server);
    idle.floor.push(round.idle.floor);
    peak.server.push(round.peak.server);
    peak.floor.push(round.peak.floor);
    if (round.problems !== undefined) problems = round.problems;
  }
  return { rounds, idle, peak, problems };
}

/** One round: fresh servers on fresh copies, each workload measured into `rounds`; idle and peak RSS. */
async function measureRound(r, seed, rounds) {
  progress(`round ${r + 1}/${ROUNDS}`);
  const dir = seededDir(seed);
  const quotaDir = seededDir(seed);
  const meteredDir = seededDir(seed);
  const started = [];
  try {
    const server = await start('server', { dataDir: dir });
    started.push(server);
    const quota = await start('server', { dataDir: quotaDir, serverArgs: QUOTA_ARGS, as: 'quota' });
    started.push(quota);
    const metered = await start('metrics', { dataDir: meteredDir });
    started.push(metered);
    const floor = await start('floor');
    started.push(floor);
    const headers = await start('headers');
    started.push(headers);
    await sleep(1000);
    const idleServer = memory(server.pid).rss;
    const idleFloor = memory(floor.pid).rss;
    const problems = r === 0 ? await sanity(server, floor, headers, quota, metered) : undefined;
    const top = { server: 0, floor: 0, headers: 0, quota: 0, metrics: 0 };
    const record = (key, target, m) => {
      rounds[key][target.kind].push(m);
      top[target.kind] = Math.max(top[target.kind], m.peakRss);
      progress(
        `  ${key.padEnd(6)} ${target.kind.padEnd(6)} ${fmt.int(m.rps).padStart(7)}/s  p50 ${fmt.ms(m.p50)} ms  p99 ${fmt.ms(m.p99)} ms  errors ${m.errors}  rss ${fmt.mb(m.peakRss)} MB  cpu ${fmt.ms(m.cpuPerAnswer)} µs`,
      );
    };
    const run = async (key, target, workload, connections) =>
      record(key, target, await measure(target, workload, opts(connections)));
    // Server and floors take turns of SECONDS / SLICES each, so that the machine's slower spells fall on all three.
    const interleaved = async (key, targets, workload) => {
      const results = await measureInterleaved(targets, workload, { ...opts(), slices: SLICES });
      targets.forEach((t, i) => record(key, t, results[i]));
    };
    await warmUp(server, floor, headers, quota, metered);
    // Alternate who goes first, so neither always runs on a warmer (or hotter) machine.
    const order = r % 2 === 0 ? [server, quota, floor, headers] : [headers, floor, quota, server];
    // The server with metrics on takes its turns among them, for the list only.
    await interleaved('list', r % 2 === 0 ? [...order, metered] : [metered, ...order], list);
    await interleaved('one', order, one(SEED_PETS));
    await run('sold', server, sold(100));
    await run('post1', server, create, 1);
    await run('post16', server, create, 16);
    return { idle: { server: idleServer, floor: idleFloor }, peak: top, problems };
  } finally {
    for (const t of started) await stop(t);
    removeDir(dir);
    removeDir(quotaDir);
    removeDir(meteredDir);
  }
}

/** Each target warmed on its workloads for WARMUP seconds (none when it is 0). */
async function warmUp(server, floor, headers, quota, metered) {
  if (WARMUP <= 0) return;
  for (const [t, w] of [
    [server, list],
    [floor, list],
    [headers, list],
    [quota, list],
    [metered, list],
    [server, one(SEED_PETS)],
    [floor, one(SEED_PETS)],
    [headers, one(SEED_PETS)],
    [quota, one(SEED_PETS)],
    [server, sold(100)],
    [server, create],
  ]) {
    await measure(t, w, opts(CONNECTIONS, WARMUP));
  }
}

/** Spawn → first answer of the server (an empty store) and the floor, SPAWNS times, the order alternating. */
async function coldStarts() {
  const kinds = ['server', 'floor'];
  const cold = { server: [], floor: [] };
  progress(`cold start × ${SPAWNS}`);
  for (let i = 0; i < SPAWNS; i++) {
    for (const kind of i % 2 === 0 ? kinds : [...kinds].reverse()) {
      const dir = kind === 'server' ? tempDir() : undefined; // empty store
      try {
        const t = await start(kind, { dataDir: dir });
        cold[kind].push(t.startMs);
        await stop(t);
      } finally {
        if (dir !== undefined) removeDir(dir);
      }
    }
  }
  return cold;
}

/** The row makers of the main tables, over the rounds' measurements. */
function mainRows(rounds) {
  const stat = (key, kind, field) => median(rounds[key][kind].map((m) => m[field]));
  const range = (key, kind) => {
    const v = rounds[key][kind].map((m) => m.rps);
    return v.length === 0 ? '' : ` (${fmt.int(Math.min(...v))}–${fmt.int(Math.max(...v))})`;
  };
  // The median of the rounds' own ratios: each round measures both, so a machine that
  // is slower for a while slows both sides of that round's ratio, not just one side of the medians.
  const pairedRatio = (key, a, b) => median(rounds[key][a].map((m, i) => m.rps / rounds[key][b][i].rps));
  const errors = (key) =>
    Object.values(rounds[key])
      .flat()
      .reduce((sum, m) => sum + m.errors, 0);
  const loadRow = (label, key, withFloor) => {
    const s = [
      `${fmt.int(stat(key, 'server', 'rps'))}${range(key, 'server')}`,
      fmt.ms(stat(key, 'server', 'p50')),
      fmt.ms(stat(key, 'server', 'p99')),
    ];
    const f = withFloor
      ? [
          `${fmt.int(stat(key, 'floor', 'rps'))}${range(key, 'floor')}`,
          fmt.ms(stat(key, 'floor', 'p50')),
          fmt.ms(stat(key, 'floor', 'p99')),
        ]
      : ['', '', ''];
    const ratio = withFloor ? fmt.ratio(pairedRatio(key, 'server', 'floor')) : '';
    return `| ${label} | ${s.join(' | ')} | ${f.join(' | ')} | ${ratio} | ${errors(key)} |`;
  };
  const headersRow = (label, key) => {
    const h = stat(key, 'headers', 'rps');
    return (
      `| ${label} | ${fmt.int(h)}${range(key, 'headers')} | ${fmt.ms(stat(key, 'headers', 'p50'))} | ${fmt.ms(stat(key, 'headers', 'p99'))} | ` +
      `${fmt.ratio(pairedRatio(key, 'headers', 'floor'))} | ${fmt.ratio(pairedRatio(key, 'server', 'headers'))} |`
    );
  };
  const metricsRow = (label, key) =>
    `| ${label} | ${fmt.int(stat(key, 'metrics', 'rps'))}${range(key, 'metrics')} | ${fmt.ms(stat(key, 'metrics', 'p50'))} | ` +
    `${fmt.ms(stat(key, 'metrics', 'p99'))} | ${fmt.ratio(pairedRatio(key, 'metrics', 'server'))} | ${fmt.ms(stat(key, 'metrics', 'cpuPerAnswer'))} | ${fmt.ratio(median(rounds[key].server.map((m, i) => m.cpuPerAnswer / rounds[key].metrics[i].cpuPerAnswer)))} |`;
  const quotaRow = (label, key) =>
    `| ${label} | ${fmt.int(stat(key, 'quota', 'rps'))}${range(key, 'quota')} | ${fmt.ms(stat(key, 'quota', 'p50'))} | ` +
    `${fmt.ms(stat(key, 'quota', 'p99'))} | ${fmt.ratio(pairedRatio(key, 'quota', 'server'))} | ${fmt.ms(stat(key, 'quota', 'cpuPerAnswer'))} | ` +
    `${fmt.ratio(median(rounds[key].quota.map((m, i) => rounds[key].server[i].cpuPerAnswer / m.cpuPerAnswer)))} |`;
  // Floor ÷ server, so that it reads as throughput does: the server's answers per CPU second as a share of the floor's.
  const pairedCpuRatio = (key, a) =>
    median(rounds[key][a].map((m, i) => m.cpuPerAnswer / rounds[key].server[i].cpuPerAnswer));
  const cpuRow = (label, key) =>
    `| ${label} | ${['server', 'floor', 'headers'].map((k) => fmt.ms(stat(key, k, 'cpuPerAnswer'))).join(' | ')} | ` +
    `${fmt.ratio(pairedCpuRatio(key, 'floor'))} | ${fmt.ratio(pairedCpuRatio(key, 'headers'))} |`;
  const plainRow = (label, server, floor, format) =>
    `| ${label} | ${format(server)} | | | ${format(floor)} | | | ${fmt.ratio(server / floor)} | |`;
  return { stat, loadRow, headersRow, metricsRow, quotaRow, cpuRow, plainRow };
}

function mainMarkdown({ rounds, idle, peak, problems, cold, fsyncRate, traced }) {
  const rows = mainRows(rounds);
  const { stat, loadRow, plainRow } = rows;
  const m = machine();
  const post1 = stat('post1', 'server', 'rps');
  const post16 = stat('post16', 'server', 'rps');
  return [
    '## Server vs floor',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${ROUNDS} rounds (fresh server, server under a quota, server with metrics, floor and floor + headers each round, order alternating) × ${SECONDS} s per measurement after ${WARMUP} s warm-up, ` +
      `the GETs in ${SLICES} turns of ${TURN} s with the servers and floors taking turns (the machine's slower spells then fall on all four); ` +
      `${CONNECTIONS} keep-alive connections unless stated; autocannon in the runner process on the same machine. ` +
      `Figures are medians over rounds, (min–max) of the rounds beside req/s; latency p50/p99 from every response; a ratio is the median of the rounds' own ratios (both sides measured in the same round, the GETs in turns).`,
    '',
    '| Measure | Server | p50 ms | p99 ms | Floor | p50 ms | p99 ms | Server ÷ floor | Errors |',
    '|---|--:|--:|--:|--:|--:|--:|--:|--:|',
    loadRow('GET /v1/pets?limit=20, req/s', 'list', true),
    loadRow('GET /v1/pets?status=sold&limit=100, req/s', 'sold', false),
    loadRow(`GET /v1/pets/{id}, random of ${fmt.int(SEED_PETS)}, req/s`, 'one', true),
    loadRow('POST /v1/pets (durable, 201), 1 connection, creates/s', 'post1', false),
    loadRow('POST /v1/pets (durable, 201), 16 connections, creates/s', 'post16', false),
    plainRow(
      `Cold start, spawn → first answer, ms (median of ${SPAWNS}, empty store)`,
      median(cold.server),
      median(cold.floor),
      fmt.ms,
    ),
    plainRow(
      `RSS idle 1 s after start, MB (${fmt.int(SEED_PETS)} pets)`,
      median(idle.server),
      median(idle.floor),
      fmt.mb,
    ),
    plainRow('RSS peak under load, MB (VmRSS sampled every 50 ms)', median(peak.server), median(peak.floor), fmt.mb),
    '',
    `fsync: this disk does ${fmt.int(fsyncRate)} fdatasync/s (80-byte append + fdatasync in a loop, 2 s, runner probe). ` +
      `POST at 1 client: ${fmt.int(post1)} creates/s (${fmt.ratio(post1 / fsyncRate)} the probe rate); at 16 clients ${fmt.int(post16)} creates/s (${fmt.ratio(post16 / fsyncRate)}).` +
      (traced === undefined
        ? ' (strace not available: fdatasync calls per create not counted.)'
        : ` Counted with strace in a separate 2 s pass: ${(traced[1].syncs / traced[1].creates).toFixed(2)} fdatasync per create at 1 client ` +
          `(${fmt.int(traced[1].syncs)} for ${fmt.int(traced[1].creates)}), ${(traced[16].syncs / traced[16].creates).toFixed(2)} at 16 clients ` +
          `(${fmt.int(traced[16].syncs)} for ${fmt.int(traced[16].creates)}, group commit).`),
    'Errors: responses other than 200 (GET) or 201 (POST), plus socket errors and timeouts, summed over all rounds.',
    'The server runs with its defaults (log level info: one JSON line per request on stdout, written to a file the runner does not read); the floor logs nothing.',
    '',
    ...headersSection(rows),
    ...quotaSection(rows),
    ...metricsSection(rows),
    ...cpuSection(rows),
    ...(problems.length === 0 ? [] : ['', `**Sanity check failed:** ${problems.join('; ')}`]),
  ].join('\n');
}

const headersSection = ({ headersRow }) => [
  '### What the required response headers cost',
  '',
  'The floor once more, with the headers the service must send: on every answer Cache-Control and X-Content-Type-Options (issue 6) ' +
    'and a new X-Request-Id made as the server makes it (issue 5); on a page with more after it Link rel="next", and on getPet ' +
    'Deprecation, Sunset and Link (decisions.md); an ETag on both, and Vary: Accept-Encoding on the page, which is over 1 KiB (issue 23). Measured in the same rounds.',
  '',
  '| Measure | Floor + headers | p50 ms | p99 ms | It ÷ floor | Server ÷ it |',
  '|---|--:|--:|--:|--:|--:|',
  headersRow('GET /v1/pets?limit=20, req/s', 'list'),
  headersRow(`GET /v1/pets/{id}, random of ${fmt.int(SEED_PETS)}, req/s`, 'one'),
  '',
];

const quotaSection = ({ quotaRow }) => [
  '### What a per-key quota costs',
  '',
  `The server once more, started with \`${QUOTA_ARGS.join(' ')}\`: a quota the measurements never reach, so every GET is counted ` +
    "against the key's window and carries RateLimit-Policy and RateLimit (issue 24). Measured in the same rounds and turns as the server; " +
    "the ratios are the medians of the rounds' own (CPU: the server's µs ÷ these, so that they read as throughput does). Target: at least 0.97× for the GETs.",
  '',
  '| Measure | Server under a quota | p50 ms | p99 ms | It ÷ server | CPU µs per answer | Server µs ÷ its µs |',
  '|---|--:|--:|--:|--:|--:|--:|',
  quotaRow('GET /v1/pets?limit=20, req/s', 'list'),
  quotaRow(`GET /v1/pets/{id}, random of ${fmt.int(SEED_PETS)}, req/s`, 'one'),
  '',
];

const metricsSection = ({ metricsRow }) => [
  '### What metrics cost',
  '',
  'The server once more with its metrics on (`--metrics-port 0`: every answer observed into its histogram series; not scraped during the turns), ' +
    'a fresh one on its own copy of the same data each round, taking its turns among the others for the list. ' +
    "Both ratios are medians of the rounds' own: req/s with metrics on divided by the server's without, and the server's CPU µs per answer divided by its own with metrics on.",
  '',
  '| Measure | Metrics on | p50 ms | p99 ms | On ÷ off, req/s | CPU µs per answer, on | Off µs ÷ on µs |',
  '|---|--:|--:|--:|--:|--:|--:|',
  metricsRow('GET /v1/pets?limit=20, req/s', 'list'),
  '',
];

const cpuSection = ({ cpuRow }) => [
  '### CPU per answer',
  '',
  'The CPU time each process used in the measurements above (user and system, all its threads, from /proc), divided by the answers it gave. ' +
    'Req/s also moves with how much of the two cores the load generator gets (autocannon, in the runner); this does not, ' +
    "and it is what each would answer per second on a core of its own. The ratios divide the floor's µs by the server's, so that they read as throughput does (the server's answers per CPU second as a share of the floor's); medians of the rounds' own.",
  '',
  '| Measure | Server µs | Floor µs | Floor + headers µs | Floor µs ÷ server µs | Floor + headers µs ÷ server µs |',
  '|---|--:|--:|--:|--:|--:|',
  cpuRow('GET /v1/pets?limit=20, CPU µs per answer', 'list'),
  cpuRow(`GET /v1/pets/{id}, random of ${fmt.int(SEED_PETS)}, CPU µs per answer`, 'one'),
];

/**
 * Scale mode. Start-up and idle RSS first: every spawn round starts each size once, the order
 * alternating, so the empty store (the baseline) is measured at the same moments as the others.
 * Then one server per size, all running together; in each GET round the sizes take short turns, so
 * that ratios between sizes come from the same moments; the POST rounds
 * come after every GET round, since they grow the journals and set off compactions.
 */
async function scaleMode() {
  const bySize = SIZES.map(sizeTemplate);
  const servers = [];
  try {
    await measureStartUps(bySize);
    const sized = bySize.slice(1);
    for (const row of sized) {
      row.dir = seededDir(row.snapshot);
      row.server = await start('server', { dataDir: row.dir });
      servers.push(row);
    }
    await measureSizedLoads(sized);
    for (const row of sized) {
      // The POSTs above grew the journal past its bound: a compaction ran in the background.
      row.loadHwm = memory(row.server.pid)?.hwm ?? NaN;
      row.stopMs = await stop(row.server);
    }
  } finally {
    for (const row of servers) await stop(row.server);
    for (const row of bySize) {
      if (row.dir !== undefined) removeDir(row.dir);
      removeDir(row.template);
    }
  }
  const markdown = scaleMarkdown(bySize);
  writeSection(RESULTS, 'scale', markdown);
  console.log(markdown);
}

/** A snapshot of `size` pets in a directory of its own, and the row its figures go into. */
function sizeTemplate(size) {
  const template = tempDir();
  const snapshot = join(template, 'pets.json');
  writeSnapshot(snapshot, size);
  return {
    size,
    template,
    snapshot,
    snapshotKb: statSync(snapshot).size / 1024,
    startup: [],
    idle: [],
    hwm: [],
    loads: {},
  };
}

/** Start-up time and idle RSS of each size, SPAWNS times, the sizes taking turns (order alternating). */
async function measureStartUps(bySize) {
  for (let i = 0; i < SPAWNS; i++) {
    progress(`scale: start-up and idle RSS, spawn ${i + 1}/${SPAWNS}`);
    for (const row of i % 2 === 0 ? bySize : [...bySize].reverse()) {
      const dir = seededDir(row.snapshot);
      try {
        const t = await start('server', { dataDir: dir });
        row.startup.push(t.startMs);
        await sleep(1000);
        const mem = memory(t.pid);
        row.idle.push(mem.rss);
        row.hwm.push(mem.hwm);
        await stop(t);
      } finally {
        removeDir(dir);
      }
    }
  }
  for (const row of bySize)
    progress(
      `  ${fmt.int(row.size)} pets: start-up ${fmt.ms(median(row.startup))} ms, idle ${fmt.mb(median(row.idle))} MB`,
    );
}

/** The GET rounds, the sizes' servers taking interleaved turns, then the POST rounds, each size in turn. */
async function measureSizedLoads(sized) {
  const record = (row, key, m) => {
    (row.loads[key] ??= []).push(m);
    progress(
      `  ${fmt.int(row.size).padStart(9)} ${key.padEnd(6)} ${fmt.int(m.rps).padStart(7)}/s  p50 ${fmt.ms(m.p50)} ms  p99 ${fmt.ms(m.p99)} ms  errors ${m.errors}`,
    );
  };
  const run = async (row, key, workload, connections) =>
    record(row, key, await measure(row.server, workload, opts(connections)));
  const gets = (row) => ({ sold: [sold(20)], one: [one(row.size)] });
  if (WARMUP > 0)
    for (const row of sized)
      for (const [w, c] of Object.values(gets(row))) await measure(row.server, w, opts(c, WARMUP));
  for (let r = 0; r < ROUNDS; r++) {
    progress(`scale: GET round ${r + 1}/${ROUNDS}`);
    const order = r % 2 === 0 ? sized : [...sized].reverse();
    // The sizes take turns of SECONDS / SLICES, so that the machine's slower spells fall on all of them.
    for (const key of ['sold', 'one']) {
      const results = await measureInterleaved(
        order.map((row) => row.server),
        order.map((row) => gets(row)[key][0]),
        { ...opts(), slices: SLICES },
      );
      order.forEach((row, i) => record(row, key, results[i]));
    }
  }
  for (let r = 0; r < ROUNDS; r++) {
    progress(`scale: POST round ${r + 1}/${ROUNDS}`);
    for (const row of r % 2 === 0 ? sized : [...sized].reverse()) {
      await run(row, 'post1', create, 1);
      await run(row, 'post16', create, 16);
    }
  }
}

/** The scale section: how it was measured, then the table. */
function scaleMarkdown(bySize) {
  const m = machine();
  const empty = bySize[0];
  return [
    '## Scale (store size)',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `Snapshots written before the first start (half "sold"). Start-up and idle RSS: median of ${SPAWNS} spawns per size, ` +
      'the sizes taking turns (order alternating), the empty store among them; RSS is VmRSS from /proc/<pid>/status 1 s after the first answer. ' +
      `Loads: one server per size, all running together; ${ROUNDS} GET rounds × ${SECONDS} s after ${WARMUP} s warm-up, the sizes taking ` +
      `${SLICES} turns of ${TURN} s each per round (who goes first rotating, the machine's slower spells then fall on all of them), ` +
      `${CONNECTIONS} connections; then the POST rounds, each size in turn (order alternating). Medians over rounds.`,
    '',
    `Empty store: start-up ${fmt.ms(median(empty.startup))} ms, RSS idle ${fmt.mb(median(empty.idle))} MB (the baseline below).`,
    '',
    ...scaleTable(empty, bySize.slice(1)),
  ].join('\n');
}

/** One column per size, the last ÷ the first; the empty store is the baseline of the RSS added per pet. */
function scaleTable(empty, sized) {
  const first = sized[0];
  const last = sized.at(-1);
  const line = (label, value, format) => {
    const cells = sized.map((row) => format(value(row)));
    return `| ${label} | ${cells.join(' | ')} | ${fmt.ratio(value(last) / value(first))} |`;
  };
  // RSS added per stored pet (RSS after start-up and 1 s idle, minus the empty store's), against the
  // bytes each pet takes in the data directory.
  const diskPerPet = (r) => (r.snapshotKb * 1024) / r.size;
  const rssPerPet = (r) => ((median(r.idle) - median(empty.idle)) * 1024) / r.size;
  const load = (key, field) => (row) => median(row.loads[key].map((x) => x[field]));
  const errors = (row) =>
    Object.values(row.loads)
      .flat()
      .reduce((sum, x) => sum + x.errors, 0);
  return [
    `| Measure | ${sized.map((r) => `${fmt.int(r.size)} pets`).join(' | ')} | ${fmt.int(last.size)} ÷ ${fmt.int(first.size)} |`,
    `|---|${sized.map(() => '--:').join('|')}|--:|`,
    line('Snapshot file, MB', (r) => r.snapshotKb, fmt.mb),
    line('Bytes on disk per pet', diskPerPet, fmt.int),
    line("RSS added per pet (idle RSS minus the empty store's), bytes", rssPerPet, fmt.int),
    line('RSS added per pet ÷ bytes on disk per pet', (r) => rssPerPet(r) / diskPerPet(r), fmt.ratio),
    line('Start-up, spawn → first answer, ms', (r) => median(r.startup), fmt.ms),
    line("Start-up ÷ the empty store's", (r) => median(r.startup) / median(empty.startup), fmt.ratio),
    line('RSS idle 1 s after start, MB', (r) => median(r.idle), fmt.mb),
    line('RSS peak during start-up (VmHWM), MB', (r) => median(r.hwm), fmt.mb),
    line('RSS peak after the loads, compaction included (VmHWM), MB', (r) => r.loadHwm, fmt.mb),
    line('POST 1 connection, creates/s', load('post1', 'rps'), fmt.int),
    line('POST 1 connection, p50 ms', load('post1', 'p50'), fmt.ms),
    line('POST 1 connection, p99 ms', load('post1', 'p99'), fmt.ms),
    line('POST 16 connections, creates/s', load('post16', 'rps'), fmt.int),
    line('POST 16 connections, p50 ms', load('post16', 'p50'), fmt.ms),
    line('POST 16 connections, p99 ms', load('post16', 'p99'), fmt.ms),
    line('GET ?status=sold&limit=20, req/s', load('sold', 'rps'), fmt.int),
    line('GET ?status=sold&limit=20, p50 ms', load('sold', 'p50'), fmt.ms),
    line('GET ?status=sold&limit=20, p99 ms', load('sold', 'p99'), fmt.ms),
    line('GET /v1/pets/{id} (random id), req/s', load('one', 'rps'), fmt.int),
    line('GET /v1/pets/{id}, p50 ms', load('one', 'p50'), fmt.ms),
    line('GET /v1/pets/{id}, p99 ms', load('one', 'p99'), fmt.ms),
    line(
      'GET ?status=sold&limit=20, p99 ÷ at 1,000 pets',
      (r) => load('sold', 'p99')(r) / load('sold', 'p99')(first),
      fmt.ratio,
    ),
    line('GET /v1/pets/{id}, p99 ÷ at 1,000 pets', (r) => load('one', 'p99')(r) / load('one', 'p99')(first), fmt.ratio),
    line('Stop after the POSTs (SIGTERM → exit, rewrites the snapshot), ms', (r) => r.stopMs, fmt.ms),
    `| Errors (non-2xx/201, socket) | ${sized.map(errors).join(' | ')} | |`,
  ];
}

if (!existsSync(join(ROOT, 'dist/server.js'))) {
  console.error('dist/server.js is missing: run `npm run build` first (or `npm run bench`).');
  process.exit(1);
}
try {
  const [module, mode] = MODES[flags[0]] ?? [];
  if (module !== undefined) await (await import(module))[mode]();
  else await (SCALE ? scaleMode() : mainMode());
} catch (error) {
  console.error(error);
  process.exitCode = 1;
}
