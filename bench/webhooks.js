/**
 * `node bench/run.js --webhooks`: what webhook delivery (issue 44) costs the API, and how soon a
 * receiver hears of a new pet. In every round two servers, fresh, on copies of one seeded data
 * directory (1,000 pets): one without subscriptions (the floor) and one with ten, delivering to
 * receivers in a process of their own (bench/webhook-receivers.js): seven answer at once, one never
 * answers, one answers 500, one after 2 s. Durable creates at BENCH_CONNECTIONS_CREATE (16)
 * connections, then GET /v1/pets?limit=20 at 10, in interleaved turns; medians over rounds.
 *
 * Then the latency: one server with one subscription to a receiver in this process, BENCH_LATENCY_PETS
 * (500) creates one after another, 10 ms apart: from the 201 to the receiver's request, p50 and p99.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import {
  call,
  envNumber,
  fmt,
  machine,
  measureInterleaved,
  median,
  ROOT,
  removeDir,
  sleep,
  start,
  stop,
  tempDir,
  turnSeconds,
  writeSection,
} from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 3, 1);
const SECONDS = envNumber('BENCH_SECONDS', 5, 1);
const SLICES = envNumber('BENCH_SLICES', 5, 1);
const CREATE_CONNECTIONS = envNumber('BENCH_CONNECTIONS_CREATE', 16, 1);
const READ_CONNECTIONS = envNumber('BENCH_CONNECTIONS', 10, 1);
const LATENCY_PETS = envNumber('BENCH_LATENCY_PETS', 500, 10);
const RESULTS = join(ROOT, 'bench/results.md');
const ALLOW = ['--webhooks-allow-http', '--webhooks-allow-private'];
const progress = (text) => process.stderr.write(`${text}\n`);
turnSeconds(SECONDS, SLICES);

let created = 0;
const create = {
  method: 'POST',
  path: '/v1/pets',
  body: () => `{"name":"bench-${++created}","categoryId":7,"status":"available"}`,
  expect: 201,
};
const list = { method: 'GET', path: '/v1/pets?limit=20', expect: 200 };

function subscribe(dataDir, url) {
  const run = spawnSync(
    process.execPath,
    [join(ROOT, 'dist/server.js'), 'webhooks', 'add', url, '--data-dir', dataDir, ...ALLOW],
    { encoding: 'utf8' },
  );
  if (run.status !== 0) throw new Error(`webhooks add failed: ${run.stderr}`);
}

async function startReceivers() {
  const child = spawn(process.execPath, [join(ROOT, 'bench/webhook-receivers.js')], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const [line] = await createInterface({ input: child.stdout })
    [Symbol.asyncIterator]()
    .next()
    .then((r) => [r.value]);
  return { urls: JSON.parse(line), close: () => child.stdin.end() };
}

/** A create through the harness's client: its id and when its 201 arrived. */
async function post(origin) {
  const { status, body, at } = await call(origin, 'POST', '/v1/pets', { body: '{"name":"latency","categoryId":7}' });
  if (status !== 201) throw new Error(`the create answered ${status}`);
  return { at, id: JSON.parse(body).id };
}

async function latency() {
  const arrived = new Map();
  const receiver = createServer((req, res) => {
    const at = performance.now();
    let body = '';
    req
      .setEncoding('utf8')
      .on('data', (c) => (body += c))
      .on('end', () => {
        arrived.set(JSON.parse(body).data.id, at);
        res.writeHead(204).end();
      });
  });
  await new Promise((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  const dir = tempDir();
  subscribe(dir, `http://127.0.0.1:${receiver.address().port}/`);
  const server = await start('server', { dataDir: dir, serverArgs: ALLOW });
  const answered = [];
  try {
    for (let i = 0; i < LATENCY_PETS; i++) {
      answered.push(await post(server.origin));
      await sleep(10);
    }
    const deadline = performance.now() + 10_000;
    while (arrived.size < LATENCY_PETS && performance.now() < deadline) await sleep(10);
  } finally {
    await stop(server);
    receiver.close();
    removeDir(dir);
  }
  // A request that came before its 201 was read here counts as 0.
  const delays = answered.map(({ at, id }) => Math.max(0, (arrived.get(id) ?? Infinity) - at)).sort((a, b) => a - b);
  const pct = (p) => delays[Math.min(delays.length - 1, Math.ceil(p * delays.length) - 1)];
  return { p50: pct(0.5), p99: pct(0.99), max: delays.at(-1), missing: delays.filter((d) => d === Infinity).length };
}

export async function webhooksMode() {
  const seed = join(tempDir(), 'pets.json');
  writeSnapshot(seed, 1000);
  const receivers = await startReceivers();
  const rows = [];
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      progress(`webhooks: round ${round}/${ROUNDS}`);
      const offDir = tempDir();
      const onDir = tempDir();
      seedDirectory(offDir, seed);
      seedDirectory(onDir, seed);
      for (const url of receivers.urls) subscribe(onDir, url);
      const off = await start('server', { dataDir: offDir, serverArgs: ALLOW, as: 'off' });
      const on = await start('server', { dataDir: onDir, serverArgs: ALLOW, as: 'on' });
      try {
        const [createOff, createOn] = await measureInterleaved([off, on], create, {
          seconds: SECONDS,
          connections: CREATE_CONNECTIONS,
          slices: SLICES,
        });
        const [readOff, readOn] = await measureInterleaved([off, on], list, {
          seconds: SECONDS,
          connections: READ_CONNECTIONS,
          slices: SLICES,
        });
        rows.push({ createOff, createOn, readOff, readOn });
      } finally {
        await stop(off);
        await stop(on);
      }
      for (const dir of [offDir, onDir]) removeDir(dir);
    }
  } finally {
    receivers.close();
  }
  progress('webhooks: latency');
  const late = await latency();
  const med = (pick) => median(rows.map(pick));
  const m = machine();
  const errors = rows.reduce(
    (n, r) => n + r.createOff.errors + r.createOn.errors + r.readOff.errors + r.readOn.errors,
    0,
  );
  const markdown = [
    '## Webhooks: creates and reads with ten subscriptions and without',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${ROUNDS} rounds; in each, two fresh servers on copies of one data directory of 1,000 pets, one with ten subscriptions (seven receivers answering at once, one never answering, one answering 500, one after 2 s; receivers in a process of their own); ${SECONDS} s each in ${SLICES} interleaved turns. Medians over rounds; the ratio is the median of each round's on ÷ off.`,
    '',
    '| | off | on | on ÷ off | p99 off, ms | p99 on, ms |',
    '|---|--:|--:|--:|--:|--:|',
    `| POST /v1/pets, ${CREATE_CONNECTIONS} connections, creates/s | ${fmt.int(med((r) => r.createOff.rps))} | ${fmt.int(med((r) => r.createOn.rps))} | ${fmt.ratio(med((r) => r.createOn.rps / r.createOff.rps))} | ${fmt.ms(med((r) => r.createOff.p99))} | ${fmt.ms(med((r) => r.createOn.p99))} |`,
    `| GET /v1/pets?limit=20, ${READ_CONNECTIONS} connections, req/s | ${fmt.int(med((r) => r.readOff.rps))} | ${fmt.int(med((r) => r.readOn.rps))} | ${fmt.ratio(med((r) => r.readOn.rps / r.readOff.rps))} | ${fmt.ms(med((r) => r.readOff.p99))} | ${fmt.ms(med((r) => r.readOn.p99))} |`,
    `| server CPU per create, µs | ${fmt.int(med((r) => r.createOff.cpuPerAnswer))} | ${fmt.int(med((r) => r.createOn.cpuPerAnswer))} | ${fmt.ratio(med((r) => r.createOn.cpuPerAnswer / r.createOff.cpuPerAnswer))} | | |`,
    `| server CPU per list, µs | ${fmt.int(med((r) => r.readOff.cpuPerAnswer))} | ${fmt.int(med((r) => r.readOn.cpuPerAnswer))} | ${fmt.ratio(med((r) => r.readOn.cpuPerAnswer / r.readOff.cpuPerAnswer))} | | |`,
    '',
    `Creates/s on ÷ off per round: ${rows.map((r) => (r.createOn.rps / r.createOff.rps).toFixed(3)).join(', ')}; reads: ${rows.map((r) => (r.readOn.rps / r.readOff.rps).toFixed(3)).join(', ')}. Errors: ${errors}.`,
    '',
    `From the 201 to the receiver's request (one subscription, a receiver answering at once, ${LATENCY_PETS} creates 10 ms apart): p50 ${fmt.ms(late.p50)} ms, p99 ${fmt.ms(late.p99)} ms, max ${fmt.ms(late.max)} ms; not delivered within 10 s: ${late.missing}.`,
  ].join('\n');
  writeSection(RESULTS, 'webhooks', markdown);
  process.stdout.write(`${markdown}\n`);
}
