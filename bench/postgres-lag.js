/**
 * How long a pet committed through one PostgreSQL instance takes to reach another's lists while both
 * take creates (`BENCH_PG_ONLY=lag node bench/run.js --postgres`, and in the whole --postgres run).
 * Two instances on one database, each with a stream open from the start; autocannon, in child
 * processes so that the runner's clock is not held by it, creates through both at once with
 * BENCH_PG_LAG_CONNECTIONS connections each for BENCH_PG_LAG_SECONDS; meanwhile the runner creates a
 * pet every 10 ms, through each instance in turn, and takes the time from the arrival of its 201 to
 * the arrival of its event on the other instance's stream. An instance tells its streams of a pet
 * only once its copy holds it (pet-copy.ts), so this is also when the pet is in that instance's
 * lists. Both streams must also carry every id of the run, none skipped.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { call, envNumber, fmt, KEY, openStream, removeDir, ROOT, sleep, start, stop, tempDir } from './harness.js';

const SECONDS = envNumber('BENCH_PG_LAG_SECONDS', 10, 1);
const CONNECTIONS = envNumber('BENCH_PG_LAG_CONNECTIONS', 4, 1);
const PROBE_EVERY_MS = 10;

/** autocannon creating through `origin` in a child process; resolves to its creates/s and non-2xx count. */
function createLoad(origin) {
  const args = [
    join(ROOT, 'node_modules/autocannon/autocannon.js'),
    '-c',
    String(CONNECTIONS),
    '-d',
    String(SECONDS),
    '-m',
    'POST',
    '-j',
    '-H',
    `authorization=Bearer ${KEY}`,
    '-H',
    'content-type=application/json',
    '-b',
    '{"name":"lag-load","categoryId":7}',
    `${origin}/v1/pets`,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`autocannon exited ${code}`));
      const result = JSON.parse(out);
      resolve({ rps: result.requests.average, errors: result.non2xx + result.errors });
    });
  });
}

const pct = (values, p) =>
  [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.ceil(p * values.length) - 1)];

/** The table's lines, for bench/results.md. */
export async function lagAcrossInstances(cluster) {
  const name = 'bench_lag';
  cluster.createDatabase(name);
  const serverArgs = ['--database-url', cluster.url(name)];
  const servers = [];
  const dirs = [tempDir(), tempDir()];
  try {
    for (const dataDir of dirs) servers.push(await start('server', { dataDir, serverArgs }));
    const streams = await Promise.all(servers.map((s) => openStream(s.origin, 0)));
    const loads = servers.map((s) => createLoad(s.origin));
    const probes = []; // { id, at, to }
    const until = performance.now() + SECONDS * 1000;
    for (let i = 0; performance.now() < until; i++) {
      const from = i % 2;
      const created = await call(servers[from].origin, 'POST', '/v1/pets', {
        body: `{"name":"lag-${i}","categoryId":7}`,
      });
      if (created.status !== 201) throw new Error(`a probe create answered ${created.status}`);
      probes.push({ id: JSON.parse(created.body).id, at: created.at, to: 1 - from });
      await sleep(PROBE_EVERY_MS);
    }
    const load = await Promise.all(loads);
    const lastId = Math.max(...probes.map((p) => p.id));
    for (const deadline = performance.now() + 10_000; !streams.every((s) => s.arrivals.has(lastId)); await sleep(5)) {
      if (performance.now() > deadline) throw new Error(`pet ${lastId} did not reach both streams within 10 s`);
    }
    await sleep(200); // the load's last pets
    for (const [i, s] of streams.entries()) {
      // In the order they arrived: 1, 2, 3, … with none missing.
      const wrong = [...s.arrivals.keys()].findIndex((id, at) => id !== at + 1);
      if (wrong !== -1) throw new Error(`instance ${i}'s stream skipped or reordered pet ${wrong + 1}`);
    }
    for (const s of streams) s.close();
    const lags = probes.map((p) => streams[p.to].arrivals.get(p.id) - p.at);
    const total = Math.min(...streams.map((s) => s.arrivals.size));
    return [
      '### Lag across two instances under concurrent creates',
      '',
      `Two instances on one database, ${SECONDS} s; autocannon creating through each with ${CONNECTIONS} connections (in child processes): ` +
        `${fmt.int(load[0].rps)} and ${fmt.int(load[1].rps)} creates/s, ${load[0].errors + load[1].errors} answers other than 201. ` +
        `Meanwhile ${probes.length} probe creates, one every ${PROBE_EVERY_MS} ms through each instance in turn; from the arrival of a probe's 201 ` +
        `to the arrival of its event on the other instance's stream (sent once that instance's copy holds it). Both streams carried every one of the ${fmt.int(total)} pets, in order of id, none skipped.`,
      '',
      '| p50 ms | p90 ms | p99 ms | max ms |',
      '|--:|--:|--:|--:|',
      `| ${fmt.ms(pct(lags, 0.5))} | ${fmt.ms(pct(lags, 0.9))} | ${fmt.ms(pct(lags, 0.99))} | ${fmt.ms(Math.max(...lags))} |`,
    ];
  } finally {
    for (const s of servers) await stop(s);
    for (const d of dirs) removeDir(d);
  }
}
