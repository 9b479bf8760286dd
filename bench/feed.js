/**
 * `node bench/run.js --feed`: clients that keep up (issue 23), how fast and at what cost.
 *
 * Latency: a stream is open (Accept: text/event-stream) and a client waits (`?after=<last>&wait=30`);
 * then another client creates a pet and gets its 201. Measured, per create, from the arrival of the
 * 201 to the arrival of the waiting client's answer, and of the pet's event on the stream (both
 * can come first: the server answers them once the pet is durable, as it does the 201).
 * BENCH_FEED_CREATES (200) creates one after another, each once the last was seen by both. On one
 * instance (file store); then, with PostgreSQL installed, across two instances on one database (a
 * throwaway cluster): created through one, waited for and streamed on the other.
 *
 * Compression: the server's CPU per answer of GET /v1/pets?limit=20 and ?limit=100 without and
 * with Accept-Encoding: gzip, the two taking turns (BENCH_SLICES) on the same server seeded with
 * 1,000 pets, and the bytes of each answer; then node:zlib alone on the same two pages, µs per call
 * (median of BENCH_ZLIB_RUNS runs of 500): gzip at levels 1, 6 and 9, and the server's own (level 6, its
 * window fitted to the answer), brotli at qualities 4, 5 and 11.
 */
import { copyFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';
import {
  call,
  envNumber,
  fmt,
  machine,
  measureInterleaved,
  median,
  openStream,
  removeDir,
  ROOT,
  start,
  stop,
  tempDir,
  turnSeconds,
  writeSection,
} from './harness.js';
import { writeSnapshot } from './pets.js';
import { postgresBin, startCluster } from './cluster.js';

const CREATES = envNumber('BENCH_FEED_CREATES', 200, 1);
const SECONDS = envNumber('BENCH_SECONDS', 5, 1);
const SLICES = envNumber('BENCH_SLICES', 5, 1);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10, 1);
const ZLIB_RUNS = envNumber('BENCH_ZLIB_RUNS', 9, 1);
const TURN = turnSeconds(SECONDS, SLICES);
const progress = (text) => process.stderr.write(`${text}\n`);
// The server's own gzip (its window fitted to the answer), beside node:zlib's defaults.
const { gzip: serverGzip } = createRequire(import.meta.url)(join(ROOT, 'dist/http/pipeline/compression.js'));

const until = async (check, ms, what) => {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 1));
  }
};

/** Creates through `creator`, each awaited by a waiting request and a stream on `watcher`. */
async function latencies(creator, watcher) {
  let last = JSON.parse(
    (await call(creator.origin, 'POST', '/v1/pets', { body: '{"name":"feed-first","categoryId":7}' })).body,
  ).id;
  const stream = await openStream(watcher.origin, last);
  const waited = [];
  const streamed = [];
  try {
    for (let i = 0; i < CREATES; i++) {
      const waiting = call(watcher.origin, 'GET', `/v1/pets?after=${last}&wait=30`);
      await new Promise((r) => setTimeout(r, 20)); // held by the server before the create
      const created = await call(creator.origin, 'POST', '/v1/pets', { body: `{"name":"feed-${i}","categoryId":7}` });
      if (created.status !== 201) throw new Error(`create answered ${created.status}`);
      last = JSON.parse(created.body).id;
      const answer = await waiting;
      if (!answer.body.includes(`"id":${last},`))
        throw new Error(`the waiting request got ${answer.body} instead of pet ${last}`);
      await until(() => stream.arrivals.has(last), 5000, `pet ${last} on the stream`);
      waited.push(answer.at - created.at);
      streamed.push(stream.arrivals.get(last) - created.at);
    }
  } finally {
    stream.close();
  }
  return { waited, streamed };
}

const pct = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
};

/** µs per call of `compress(body)`: the median of ZLIB_RUNS runs of 500 calls. */
function zlibCost(compress, body) {
  for (let i = 0; i < 200; i++) compress(body);
  const runs = [];
  for (let r = 0; r < ZLIB_RUNS; r++) {
    const t0 = performance.now();
    for (let i = 0; i < 500; i++) compress(body);
    runs.push(((performance.now() - t0) * 1000) / 500);
  }
  return { us: median(runs), bytes: compress(body).length };
}

const brotli = (quality) => (body) =>
  brotliCompressSync(body, {
    params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  });

export async function feedMode() {
  const seedDir = tempDir();
  writeSnapshot(join(seedDir, 'pets.json'), 1000);
  writeFileSync(join(seedDir, 'pets-journal.1.jsonl'), '', { mode: 0o600 });
  const dir = tempDir();
  for (const file of ['pets.json', 'pets-journal.1.jsonl']) copyFileSync(join(seedDir, file), join(dir, file));
  removeDir(seedDir);
  const { file, pages, cpu } = await oneInstance(dir);
  const rows = { file, pg: await twoPostgresInstances() };
  const markdown = feedMarkdown(rows, cpu, zlibCosts(pages));
  writeSection(join(ROOT, 'bench/results.md'), 'feed', markdown);
  console.log(markdown);
}

/** One server on the file store in `dir` (removed after): the feed's latency, and what gzip costs per answer. */
async function oneInstance(dir) {
  progress(`feed: latency on one instance, ${CREATES} creates`);
  const pages = {};
  const cpu = {};
  const server = await start('server', { dataDir: dir });
  try {
    const file = await latencies(server, server);
    progress('feed: CPU per answer with and without gzip');
    for (const limit of [20, 100]) {
      const path = `/v1/pets?limit=${limit}`;
      const plain = { method: 'GET', path, expect: 200 };
      const zipped = { ...plain, headers: () => ({ 'accept-encoding': 'gzip' }) };
      const [a, b] = await measureInterleaved([server, server], [plain, zipped], {
        seconds: SECONDS,
        connections: CONNECTIONS,
        slices: SLICES,
      });
      const identity = await call(server.origin, 'GET', path);
      const gzip = await call(server.origin, 'GET', path, { headers: { 'accept-encoding': 'gzip' } });
      if (gzip.headers['content-encoding'] !== 'gzip') throw new Error(`${path} was not gzip-coded`);
      pages[limit] = identity.body;
      cpu[limit] = { plain: a, gzip: b, plainBytes: identity.body.length, gzipBytes: gzip.body.length };
      progress(
        `  limit=${limit}: ${fmt.ms(a.cpuPerAnswer)} µs plain, ${fmt.ms(b.cpuPerAnswer)} µs gzip; ${identity.body.length} → ${gzip.body.length} bytes`,
      );
    }
    return { file, pages, cpu };
  } finally {
    await stop(server);
    removeDir(dir);
  }
}

/** The feed's latency from one PostgreSQL instance's 201 to the other's answers; undefined without PostgreSQL. */
async function twoPostgresInstances() {
  const bin = postgresBin();
  if (bin === undefined) {
    progress('feed: PostgreSQL is not installed, the two-instance latency is left out');
    return undefined;
  }
  progress(`feed: latency across two PostgreSQL instances, ${CREATES} creates`);
  const cluster = await startCluster(bin);
  const servers = [];
  try {
    cluster.createDatabase('bench_feed');
    const serverArgs = ['--database-url', cluster.url('bench_feed')];
    for (let i = 0; i < 2; i++) servers.push(await start('server', { dataDir: tempDir(), serverArgs }));
    return await latencies(servers[0], servers[1]);
  } finally {
    for (const s of servers) await stop(s);
    cluster.destroy();
  }
}

/** node:zlib alone on the two pages, coding by coding. */
function zlibCosts(pages) {
  return [
    ['gzip, level 1', (b) => gzipSync(b, { level: 1 })],
    ['gzip, level 6', (b) => gzipSync(b)],
    ["gzip, level 6, the window fitted to the answer (the server's)", (b) => serverGzip(b, b.length)],
    ['gzip, level 9', (b) => gzipSync(b, { level: 9 })],
    ['brotli, quality 4', brotli(4)],
    ['brotli, quality 5', brotli(5)],
    ['brotli, quality 11 (its default)', brotli(11)],
  ].map(([label, compress]) => ({ label, 20: zlibCost(compress, pages[20]), 100: zlibCost(compress, pages[100]) }));
}

function feedMarkdown(rows, cpu, zlib) {
  const latencyRow = (label, values) =>
    `| ${label} | ${fmt.ms(pct(values, 0.5))} | ${fmt.ms(pct(values, 0.9))} | ${fmt.ms(pct(values, 0.99))} | ${fmt.ms(Math.min(...values))} | ${fmt.ms(Math.max(...values))} |`;
  const cpuRow = (limit) => {
    const c = cpu[limit];
    return `| GET /v1/pets?limit=${limit} | ${fmt.ms(c.plain.cpuPerAnswer)} | ${fmt.ms(c.gzip.cpuPerAnswer)} | ${fmt.ratio(c.gzip.cpuPerAnswer / c.plain.cpuPerAnswer)} | ${fmt.int(c.plainBytes)} | ${fmt.int(c.gzipBytes)} | ${fmt.ratio(c.gzipBytes / c.plainBytes)} |`;
  };
  const m = machine();
  return [
    '## Keeping up: latency of waiting requests and streams, and what gzip costs',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${CREATES} creates one after another; for each, a request waiting (\`wait=30\`) and an open stream on the watching instance, and the time from the arrival of the 201 ` +
      'to the arrival of the answer and of the event, in the runner (the same clock for all three). A negative figure: it arrived before the 201.',
    '',
    '| From the 201 to … | p50 ms | p90 ms | p99 ms | min ms | max ms |',
    '|---|--:|--:|--:|--:|--:|',
    latencyRow("the waiting request's answer, one instance (file store)", rows.file.waited),
    latencyRow("the stream's event, one instance (file store)", rows.file.streamed),
    ...(rows.pg === undefined
      ? []
      : [
          latencyRow("the waiting request's answer, the other of two PostgreSQL instances", rows.pg.waited),
          latencyRow("the stream's event, the other of two PostgreSQL instances", rows.pg.streamed),
        ]),
    '',
    `### Compression`,
    '',
    `The server on 1,000 pets, ${CONNECTIONS} connections, plain and gzip taking ${SLICES} turns of ${TURN} s each; CPU per answer as in "CPU per answer" above.`,
    '',
    '| Answer | Plain, CPU µs | gzip, CPU µs | gzip ÷ plain | Plain, bytes | gzip, bytes | gzip ÷ plain |',
    '|---|--:|--:|--:|--:|--:|--:|',
    cpuRow(20),
    cpuRow(100),
    '',
    `node:zlib alone on the same two pages, in the runner: µs per call (median of ${ZLIB_RUNS} runs of 500) and bytes.`,
    '',
    '| Coding | limit=20, µs | bytes | limit=100, µs | bytes |',
    '|---|--:|--:|--:|--:|',
    ...zlib.map(
      (z) =>
        `| ${z.label} | ${fmt.ms(z[20].us)} | ${fmt.int(z[20].bytes)} | ${fmt.ms(z[100].us)} | ${fmt.int(z[100].bytes)} |`,
    ),
  ].join('\n');
}
