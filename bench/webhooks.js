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
  onOffErrors,
  onOffSettings,
  onOffRounds,
  onOffTable,
  ROOT,
  removeDir,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
} from './harness.js';
import { writeSnapshot } from './pets.js';

const SETTINGS = onOffSettings(3);
const LATENCY_PETS = envNumber('BENCH_LATENCY_PETS', 500, 10);
const RESULTS = join(ROOT, 'bench/results.md');
const ALLOW = ['--webhooks-allow-http', '--webhooks-allow-private'];
const progress = (text) => process.stderr.write(`${text}\n`);

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
  let rows;
  try {
    rows = await onOffRounds('webhooks', {
      ...SETTINGS,
      seed,
      offArgs: ALLOW,
      prepareOn: (dir) => {
        for (const url of receivers.urls) subscribe(dir, url);
        return ALLOW;
      },
    });
  } finally {
    receivers.close();
  }
  progress('webhooks: latency');
  const late = await latency();
  const m = machine();
  const markdown = [
    '## Webhooks: creates and reads with ten subscriptions and without',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${SETTINGS.rounds} rounds; in each, two fresh servers on copies of one data directory of 1,000 pets, one with ten subscriptions (seven receivers answering at once, one never answering, one answering 500, one after 2 s; receivers in a process of their own); ${SETTINGS.seconds} s each in ${SETTINGS.slices} interleaved turns. Medians over rounds; the ratio is the median of each round's on ÷ off.`,
    '',
    ...onOffTable(rows, SETTINGS),
    '',
    `Creates/s on ÷ off per round: ${rows.map((r) => (r.createOn.rps / r.createOff.rps).toFixed(3)).join(', ')}; reads: ${rows.map((r) => (r.readOn.rps / r.readOff.rps).toFixed(3)).join(', ')}. Errors: ${onOffErrors(rows)}.`,
    '',
    `From the 201 to the receiver's request (one subscription, a receiver answering at once, ${LATENCY_PETS} creates 10 ms apart): p50 ${fmt.ms(late.p50)} ms, p99 ${fmt.ms(late.p99)} ms, max ${fmt.ms(late.max)} ms; not delivered within 10 s: ${late.missing}.`,
  ].join('\n');
  writeSection(RESULTS, 'webhooks', markdown);
  process.stdout.write(`${markdown}\n`);
}
