/**
 * `node bench/run.js --instructions`: what a quota and metrics cost per request, counted rather than
 * timed. On a shared machine req/s of the same build moves by ±10 % from one round to the next, more
 * than the few per cent these features may cost; the instructions a process executes do not move
 * with the load of others. Each variant (the server, under a quota no request reaches, with metrics
 * on) runs under valgrind's callgrind with counting off; BENCH_CALLS requests (5,000) on one
 * keep-alive connection warm it up, then counting is switched on (callgrind_control) for as many
 * more. Reported: user-space instructions per request, the median of BENCH_ROUNDS runs (3), and the
 * ratio to the server's, inverted so that it reads as throughput does. Kernel time (the socket
 * writes) is not counted, so the share of the whole request is smaller than the ratio shows.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { closeSync, copyFileSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { envNumber, fmt, freePort, machine, median, removeDir, ROOT, sleep, tempDir, writeSection } from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const ROUNDS = envNumber('BENCH_ROUNDS', 3, 1);
// BENCH_VARIANTS=server,floor counts only those (a quick before/after of one change).
const ONLY = process.env.BENCH_VARIANTS?.split(',');
const CALLS = envNumber('BENCH_CALLS', 5000, 100);
const KEY = 'bench-instructions-key-0123456789';
const RESULTS = join(ROOT, 'bench/results.md');
const progress = (text) => process.stderr.write(`${text}\n`);

const VARIANTS = [
  { name: 'server', label: 'The server', args: [] },
  { name: 'quota', label: 'Under a quota (`--rate-limit 1000000000/3600`)', args: ['--rate-limit', '1000000000/3600'] },
  { name: 'metrics', label: 'Metrics on (`--metrics-port 0`)', args: ['--metrics-port', '0'] },
  // What the request log costs: it stays on by default, and this says at what price (issue 34).
  // At that level the server prints no "listening" line either: it is given a port found free.
  { name: 'quiet', label: 'Request log off (`--log-level error`)', args: ['--log-level', 'error'], quiet: true },
  // The lean floor (bench/floor.js, issue 34) and the floor with the contract's headers: what any server must spend.
  { name: 'floor', label: 'The lean floor (`bench/floor.js`)', floor: [] },
  { name: 'headers', label: "The floor with the contract's headers", floor: ['--contract-headers'] },
];
// Ids in a fixed order that visits the whole store: every run asks the same.
const LOADS = [
  { name: 'list', label: 'GET /v1/pets?limit=20', path: () => '/v1/pets?limit=20' },
  { name: 'one', label: 'GET /v1/pets/{id}, of 1,000', path: (i) => `/v1/pets/${1 + ((i * 7919) % 1000)}` },
];

function get(agent, port, path) {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, agent, headers: { authorization: `Bearer ${KEY}` } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The "listening" line's port, from the server's stdout file. */
async function listeningPort(logFile, child) {
  for (let waited = 0; waited < 120_000; waited += 50) {
    if (child.exitCode !== null) throw new Error(`the server under callgrind exited ${child.exitCode}`);
    const line = readFileSync(logFile, 'utf8')
      .split('\n')
      .find((l) => l.includes('"msg":"listening"'));
    if (line !== undefined) return Number(new URL(JSON.parse(line).url).port);
    await sleep(50);
  }
  throw new Error('the server under callgrind did not listen within 120 s');
}

/** `port` once the server under callgrind answers there (checked every 100 ms). */
async function answering(port, agent, child) {
  for (let waited = 0; waited < 120_000; waited += 100) {
    if (child.exitCode !== null) throw new Error(`the server under callgrind exited ${child.exitCode}`);
    try {
      await get(agent, port, '/v1/pets?limit=1');
      return port;
    } catch (error) {
      if (error.code !== 'ECONNREFUSED') throw error;
    }
    await sleep(100);
  }
  throw new Error('the server under callgrind did not answer within 120 s');
}

/** valgrind's arguments: callgrind, counting nothing until told, on the server (or the floor) with `variant`'s flags. */
function callgrindArgs(variant, dir, out, fixedPort) {
  return [
    '--tool=callgrind',
    '--instr-atstart=no',
    '--smc-check=all-non-file',
    `--callgrind-out-file=${out}`,
    process.execPath,
    ...(variant.floor === undefined
      ? [
          join(ROOT, 'dist/server.js'),
          '--port',
          String(fixedPort ?? 0),
          '--host',
          '127.0.0.1',
          '--data-dir',
          dir,
          ...variant.args,
        ]
      : [join(ROOT, 'bench/floor.js'), '--port', '0', ...variant.floor]),
  ];
}

/** CALLS requests to warm the process `pid` up, then CALLS more with callgrind's counting on. */
async function countRequests(pid, agent, port, variant, load) {
  let i = 0;
  const run = async () => {
    for (let k = 0; k < CALLS; k++) {
      const status = await get(agent, port, load.path(i++));
      if (status !== 200) throw new Error(`${variant.name} ${load.name}: answered ${status}`);
    }
  };
  await run();
  execFileSync('callgrind_control', ['-i', 'on', String(pid)], { stdio: 'ignore' });
  await run();
  execFileSync('callgrind_control', ['-i', 'off', String(pid)], { stdio: 'ignore' });
}

/** Instructions per request of `variant` answering `load`, counted over CALLS requests after as many unmeasured. */
async function count(seed, variant, load) {
  const fixedPort = variant.quiet === true ? await freePort() : undefined;
  const dir = tempDir();
  const scratch = tempDir('petstore-bench-cg-');
  seedDirectory(dir, seed);
  const logFile = join(scratch, 'stdout.jsonl');
  const out = join(scratch, 'callgrind.out');
  const args = callgrindArgs(variant, dir, out, fixedPort);
  // Stdout to a file, as in the main mode: the request log is written, and this process never reads it.
  const logFd = openSync(logFile, 'w');
  const child = spawn('valgrind', args, {
    env: { PATH: process.env.PATH, PETSTORE_API_KEYS: KEY },
    stdio: ['ignore', logFd, 'pipe'],
  });
  closeSync(logFd);
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr += text;
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const port =
      fixedPort === undefined ? await listeningPort(logFile, child) : await answering(fixedPort, agent, child);
    await countRequests(child.pid, agent, port, variant, load);
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await exited;
  }
  const collected = /Collected : (\d+)/.exec(stderr);
  removeDir(dir);
  // BENCH_CALLGRIND_DIR keeps each run's callgrind.out there, for callgrind_annotate.
  if (process.env.BENCH_CALLGRIND_DIR)
    copyFileSync(
      out,
      join(process.env.BENCH_CALLGRIND_DIR, `callgrind.${variant.name}.${load.name}.${process.hrtime.bigint()}`),
    );
  removeDir(scratch);
  if (collected === null) throw new Error(`callgrind reported no count:\n${stderr.slice(-2000)}`);
  return Number(collected[1]) / CALLS;
}

export async function instructionsMode() {
  for (const tool of ['valgrind', 'callgrind_control']) {
    if (spawnSync(tool, ['--version'], { stdio: 'ignore' }).status !== 0)
      throw new Error(`${tool} is needed (Debian package valgrind)`);
  }
  const seedDir = tempDir();
  const seed = join(seedDir, 'pets.json');
  writeSnapshot(seed, 1000);
  const counts = Object.fromEntries(LOADS.map((l) => [l.name, Object.fromEntries(VARIANTS.map((v) => [v.name, []]))]));
  for (let round = 0; round < ROUNDS; round++) {
    const chosen = VARIANTS.filter((v) => ONLY === undefined || ONLY.includes(v.name));
    const order = round % 2 === 0 ? chosen : [...chosen].reverse();
    for (const load of LOADS) {
      for (const variant of order) {
        const perRequest = await count(seed, variant, load);
        counts[load.name][variant.name].push(perRequest);
        progress(
          `round ${round + 1}/${ROUNDS}  ${load.name}  ${variant.name}  ${fmt.int(perRequest)} instructions per request`,
        );
      }
    }
  }
  removeDir(seedDir);
  const m = machine();
  const rows = [];
  for (const load of LOADS) {
    const base = median(counts[load.name].server);
    for (const variant of VARIANTS) {
      if (ONLY !== undefined && !ONLY.includes(variant.name)) continue;
      const runs = counts[load.name][variant.name];
      rows.push(
        `| ${load.label} | ${variant.label} | ${fmt.int(median(runs))} (${fmt.int(Math.min(...runs))}–${fmt.int(Math.max(...runs))}) | ${fmt.ratio(base / median(runs))} |`,
      );
    }
  }
  const markdown = `## Instructions per request: what a quota and metrics cost

${m.date} · node ${m.node} · ${m.cpu} · valgrind callgrind, user space only
${fmt.int(CALLS)} requests on one keep-alive connection to warm each server up, then ${fmt.int(CALLS)} counted; 1,000 pets; log level info (the request log written); median of ${ROUNDS} runs per variant, (min–max) beside it. The ratio is the server's count divided by the variant's: read as throughput, if user-space instructions were all a request cost (the kernel's socket writes, not counted, are a large part of each answer, so the real ratio is nearer 1).

| Request | Variant | Instructions per request | Server ÷ it |
|---|---|--:|--:|
${rows.join('\n')}`;
  console.log(markdown);
  writeSection(RESULTS, 'instructions', markdown);
}
