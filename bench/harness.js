/**
 * What the runner and the profiler share: starting the server or the floor as a child process,
 * driving it with autocannon, reading its memory, and cleaning up every child and temp dir even when
 * a step fails or the run is interrupted.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import {
  closeSync,
  existsSync,
  fdatasyncSync,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { Agent, createServer, request } from 'node:http';
import { cpus, loadavg, release, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { seedDirectory } from './pets.js';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
export const KEY = 'bench-key-0123456789abcdef';
const AUTH = { authorization: `Bearer ${KEY}` };

const children = new Set();
const tempDirs = new Set();

/** Last resort: whatever is still running or lying around goes, however the runner ends. */
process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});
for (const signal of ['SIGINT', 'SIGTERM']) process.once(signal, () => process.exit(130));

export function tempDir(prefix = 'petstore-bench-') {
  const dir = mkdtempSync(join(process.env.BENCH_TMPDIR ?? tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

export function removeDir(dir) {
  rmSync(dir, { recursive: true, force: true });
  tempDirs.delete(dir);
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** A child environment without the caller's PETSTORE_* settings, so only our flags apply. */
function childEnv() {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('PETSTORE_') && k !== 'PORT' && k !== 'HOST'),
  );
  return { ...env, PETSTORE_API_KEYS: KEY };
}

/**
 * Spawns the server (`kind` "server", on `dataDir`; "metrics": the same with its metrics listener on),
 * the floor ("floor"), the floor with the contract's response headers ("headers") or Fastify answering
 * as that one does ("fastify", bench/fastify.js), waits for its "listening" line and one answered GET.
 * `serverArgs` are further flags for the server (`--database-url …`) or for bench/fastify.js
 * (`--fastify-dir`, where Fastify is installed); `as` names the result's kind
 * instead (a server started with other flags, measured beside the plain one).
 * `startMs` is spawn → first answer. Stdout (the request log) goes to a temp file, never read past
 * the "listening" line.
 */
export async function start(kind, { dataDir, nodeFlags = [], serverArgs = [], as = kind } = {}) {
  const isServer = kind === 'server' || kind === 'metrics';
  const script = join(ROOT, isServer ? 'dist/server.js' : kind === 'fastify' ? 'bench/fastify.js' : 'bench/floor.js');
  const fixedPort = serverArgs.includes('--log-level') ? await freePort() : undefined;
  const args = [...nodeFlags, script, '--port', String(fixedPort ?? 0), '--host', '127.0.0.1'];
  if (isServer) args.push('--data-dir', dataDir);
  args.push(...serverArgs);
  if (kind === 'metrics') args.push('--metrics-port', '0');
  if (kind === 'headers') args.push('--contract-headers');
  const t0 = performance.now();
  // Stdout goes to a file, not to this process: the runner is also the load generator, and reading
  // the request log (a line per request) here would take its time from autocannon, a cost the floor,
  // which logs nothing, would not be charged. The server still formats and writes every line.
  const logDir = tempDir('petstore-bench-log-');
  const logFd = openSync(join(logDir, 'stdout.jsonl'), 'w');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: childEnv(), stdio: ['ignore', logFd, 'pipe'] });
  closeSync(logFd);
  children.add(child);
  child.once('exit', () => {
    children.delete(child);
    removeDir(logDir);
  });
  let stderr = '';
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (text) => {
    stderr = (stderr + text).slice(-4000);
  });
  // A server started with `--log-level error` prints no "listening" line: it is given a free port instead.
  const { url, metrics: metricsUrl } =
    fixedPort === undefined
      ? await listening(kind, child, join(logDir, 'stdout.jsonl'), () => stderr)
      : await answering(kind, child, fixedPort, () => stderr);
  const origin = new URL(url).origin;
  const first = await get(origin, '/v1/pets?limit=1');
  const startMs = performance.now() - t0;
  if (first.status !== 200) throw new Error(`${kind}: first GET answered ${first.status}: ${first.body}`);
  return { kind: as, child, pid: child.pid, url, origin, metricsUrl, startMs, stderr: () => stderr };
}

/** The "listening" line (its `url`, and `metrics` with a metrics listener) once it is in the child's stdout file (checked every millisecond). */
async function listening(kind, child, path, stderr) {
  const deadline = performance.now() + 300_000;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`${kind} exited (${child.exitCode ?? child.signalCode}) before listening:\n${stderr()}`);
    }
    for (const line of readFileSync(path, 'utf8').split('\n')) {
      let parsed;
      try {
        parsed = JSON.parse(line);
      } catch (error) {
        if (error instanceof SyntaxError) continue; // not a whole log line (yet)
        throw error;
      }
      if (parsed?.msg === 'listening' && typeof parsed.url === 'string') return parsed;
    }
    await sleep(1);
  }
  throw new Error(`${kind} did not listen within 300 s`);
}

/** A port nothing listens on now: the system's pick for a server closed at once. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Like `listening`, for a child that prints no "listening" line: its URL once `port` accepts connections. */
async function answering(kind, child, port, stderr) {
  const deadline = performance.now() + 300_000;
  while (performance.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`${kind} exited (${child.exitCode ?? child.signalCode}) before listening:\n${stderr()}`);
    try {
      await get(`http://127.0.0.1:${port}`, '/healthz', {});
      return { url: `http://127.0.0.1:${port}/v1` };
    } catch (error) {
      if (error.code !== 'ECONNREFUSED') throw error;
    }
    await sleep(5);
  }
  throw new Error(`${kind} did not listen within 300 s`);
}

/** SIGTERM, then SIGKILL after `graceMs`; resolves with the time the process took to exit. */
export async function stop(target, graceMs = 60_000) {
  const { child } = target;
  if (child.exitCode !== null || child.signalCode !== null) return 0;
  const t0 = performance.now();
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
  return performance.now() - t0;
}

/** One GET over a fresh connection: { status, headers, body }. */
export function get(origin, path, headers = AUTH) {
  return new Promise((resolve, reject) => {
    const req = request(`${origin}${path}`, { headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (text) => (body += text));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A file of /proc/<pid>, or undefined once the process is gone. */
function procFile(pid, name) {
  try {
    return readFileSync(`/proc/${pid}/${name}`, 'utf8');
  } catch (error) {
    if (error.code === 'ENOENT' || error.code === 'ESRCH') return undefined;
    throw error;
  }
}

/** Resident memory in kB: { rss: VmRSS, hwm: VmHWM (peak since start) }, or undefined once gone. */
export function memory(pid) {
  const status = procFile(pid, 'status');
  if (status === undefined) return undefined;
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]);
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/**
 * CPU time the process has used so far, user and system, all its threads, in µs; undefined once it is
 * gone. /proc counts it in clock ticks of 10 ms (USER_HZ is 100 on Linux): a 1 s turn of a busy
 * server is about 100 ticks, so one turn's figure is good to about 1%, five turns' together to better.
 */
export function cpuTime(pid) {
  const stat = procFile(pid, 'stat');
  if (stat === undefined) return undefined;
  // After the command name in parentheses (which may hold spaces): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** The length of each of `slices` turns in `seconds`; autocannon stops on whole seconds only (its sampling tick). */
export function turnSeconds(seconds, slices) {
  if (!Number.isInteger(slices) || !Number.isInteger(seconds / slices) || seconds / slices < 1) {
    throw new Error(`${seconds} s cannot be cut into ${slices} turns of whole seconds`);
  }
  return seconds / slices;
}

/**
 * Drives `target` with `workload` for `seconds` over `connections` keep-alive connections.
 * Latencies are recorded from every response at full resolution (autocannon's own histogram rounds
 * to whole milliseconds). A response with another status than `workload.expect` counts as an error.
 */
export async function measure(target, workload, options) {
  return summary(await drive(target, workload, options));
}

/** What one measurement saw, unsummarised: summed over turns by measureInterleaved. */
async function drive(target, workload, { seconds, connections }) {
  const latencies = [];
  let ok = 0;
  let wrong = 0;
  const statuses = {};
  let peakRss = 0;
  const sample = () => {
    const m = memory(target.pid);
    if (m !== undefined) peakRss = Math.max(peakRss, m.rss);
  };
  const sampler = setInterval(sample, 50);
  const dynamic =
    typeof workload.path === 'function' ||
    typeof workload.body === 'function' ||
    typeof workload.headers === 'function';
  const headers = { ...AUTH, ...(workload.body === undefined ? {} : { 'content-type': 'application/json' }) };
  const request = {
    method: workload.method,
    path: typeof workload.path === 'function' ? workload.path() : workload.path,
    headers: { ...headers, ...workload.headers?.() },
    ...(workload.body === undefined
      ? {}
      : { body: typeof workload.body === 'function' ? workload.body() : workload.body }),
    ...(dynamic
      ? {
          setupRequest: (req) => {
            if (typeof workload.path === 'function') req.path = workload.path();
            if (typeof workload.body === 'function') req.body = workload.body();
            if (typeof workload.headers === 'function') req.headers = { ...headers, ...workload.headers() };
            return req;
          },
        }
      : {}),
  };
  let result;
  const cpu0 = cpuTime(target.pid);
  try {
    const instance = autocannon({ url: target.origin, connections, duration: seconds, requests: [request] });
    instance.on('response', (_client, status, _bytes, ms) => {
      latencies.push(ms);
      if (status === workload.expect) ok++;
      else {
        wrong++;
        statuses[status] = (statuses[status] ?? 0) + 1;
      }
    });
    result = await instance;
  } finally {
    clearInterval(sampler);
  }
  sample();
  const cpu1 = cpuTime(target.pid);
  return {
    ok,
    wrong,
    errors: result.errors,
    seconds: result.duration,
    latencies,
    statuses,
    peakRss,
    cpu: cpu0 === undefined || cpu1 === undefined ? NaN : cpu1 - cpu0,
  };
}

/**
 * Drives each of `targets` with `workload` for `seconds` in all, in `slices` turns of
 * `seconds / slices` each, who goes first rotating, and merges each target's turns. The machine is
 * shared and its speed changes over tens of seconds: targets measured one after the other for the
 * whole time each can land in different phases of it, while interleaved turns share them.
 */
export async function measureInterleaved(targets, workload, { seconds, connections, slices }) {
  const turn = turnSeconds(seconds, slices);
  const turns = targets.map(() => []);
  for (let s = 0; s < slices; s++) {
    for (let k = 0; k < targets.length; k++) {
      const i = (s + k) % targets.length;
      // One workload for all, or one per target (a random id within each store's size).
      turns[i].push(
        await drive(targets[i], Array.isArray(workload) ? workload[i] : workload, { seconds: turn, connections }),
      );
    }
  }
  return turns.map((parts) => {
    const statuses = {};
    for (const m of parts)
      for (const [status, n] of Object.entries(m.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
    const sum = (field) => parts.reduce((total, m) => total + m[field], 0);
    return summary({
      ok: sum('ok'),
      wrong: sum('wrong'),
      errors: sum('errors'),
      seconds: sum('seconds'),
      cpu: sum('cpu'),
      statuses,
      latencies: parts.flatMap((m) => m.latencies),
      peakRss: Math.max(...parts.map((m) => m.peakRss)),
    });
  });
}

/**
 * The settings of onOffRounds, from the environment: BENCH_ROUNDS (`rounds` by default), BENCH_SECONDS (5) in
 * BENCH_SLICES (5) turns, BENCH_CONNECTIONS_CREATE (16) and BENCH_CONNECTIONS (10).
 */
export function onOffSettings(rounds) {
  const settings = {
    rounds: envNumber('BENCH_ROUNDS', rounds, 1),
    seconds: envNumber('BENCH_SECONDS', 5, 1),
    slices: envNumber('BENCH_SLICES', 5, 1),
    createConnections: envNumber('BENCH_CONNECTIONS_CREATE', 16, 1),
    readConnections: envNumber('BENCH_CONNECTIONS', 10, 1),
  };
  // Refuses turns too short to measure, before anything starts.
  turnSeconds(settings.seconds, settings.slices);
  return settings;
}

let created = 0;
/** The durable create every mode measures: a pet of a name of its own. */
export const CREATE = {
  method: 'POST',
  path: '/v1/pets',
  body: () => `{"name":"bench-${++created}","categoryId":7,"status":"available"}`,
  expect: 201,
};
/** The first page of 20. */
export const LIST = { method: 'GET', path: '/v1/pets?limit=20', expect: 200 };

/**
 * What a capability costs, round by round: in each, two fresh servers on copies of the `seed` snapshot, "off"
 * started with `offArgs` and "on" with the arguments `prepareOn(dataDir)` returns (it readies that directory);
 * durable creates at `createConnections`, then GET /v1/pets?limit=20 at `readConnections`, each in interleaved
 * turns. `afterRound(round)` runs once both have stopped. A row per round: { createOff, createOn, readOff, readOn }.
 */
export async function onOffRounds(
  mode,
  { rounds, seed, seconds, slices, createConnections, readConnections, offArgs = [], prepareOn, afterRound },
) {
  const rows = [];
  for (let round = 1; round <= rounds; round++) {
    process.stderr.write(`${mode}: round ${round}/${rounds}\n`);
    const offDir = tempDir();
    const onDir = tempDir();
    seedDirectory(offDir, seed);
    seedDirectory(onDir, seed);
    const onArgs = prepareOn(onDir);
    const off = await start('server', { dataDir: offDir, serverArgs: offArgs, as: 'off' });
    const on = await start('server', { dataDir: onDir, serverArgs: onArgs, as: 'on' });
    try {
      const [createOff, createOn] = await measureInterleaved([off, on], CREATE, {
        seconds,
        connections: createConnections,
        slices,
      });
      const [readOff, readOn] = await measureInterleaved([off, on], LIST, {
        seconds,
        connections: readConnections,
        slices,
      });
      rows.push({ createOff, createOn, readOff, readOn });
    } finally {
      await stop(off);
      await stop(on);
    }
    await afterRound?.(round);
    for (const dir of [offDir, onDir]) removeDir(dir);
  }
  return rows;
}

/** The table of onOffRounds' rows: medians over rounds, the ratio the median of each round's on ÷ off. */
export function onOffTable(rows, { createConnections, readConnections }) {
  const med = (pick) => median(rows.map(pick));
  const row = (what, off, on, p99) =>
    `| ${what} | ${fmt.int(med(off))} | ${fmt.int(med(on))} | ${fmt.ratio(med((r) => on(r) / off(r)))} | ` +
    (p99 === undefined ? '| |' : `${fmt.ms(med(p99[0]))} | ${fmt.ms(med(p99[1]))} |`);
  return [
    '| | off | on | on ÷ off | p99 off, ms | p99 on, ms |',
    '|---|--:|--:|--:|--:|--:|',
    row(
      `POST /v1/pets, ${createConnections} connections, creates/s`,
      (r) => r.createOff.rps,
      (r) => r.createOn.rps,
      [(r) => r.createOff.p99, (r) => r.createOn.p99],
    ),
    row(
      `GET /v1/pets?limit=20, ${readConnections} connections, req/s`,
      (r) => r.readOff.rps,
      (r) => r.readOn.rps,
      [(r) => r.readOff.p99, (r) => r.readOn.p99],
    ),
    row(
      'server CPU per create, µs',
      (r) => r.createOff.cpuPerAnswer,
      (r) => r.createOn.cpuPerAnswer,
    ),
    row(
      'server CPU per list, µs',
      (r) => r.readOff.cpuPerAnswer,
      (r) => r.readOn.cpuPerAnswer,
    ),
  ];
}

/** The failed requests of onOffRounds' rows, all turns together. */
export function onOffErrors(rows) {
  return rows.reduce((n, r) => n + r.createOff.errors + r.createOn.errors + r.readOff.errors + r.readOn.errors, 0);
}

function summary({ ok, wrong, errors, seconds, latencies, statuses, peakRss, cpu }) {
  const sorted = Float64Array.from(latencies).sort();
  const pct = (p) =>
    sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
  return {
    count: ok,
    rps: ok / seconds,
    p50: pct(0.5),
    p99: pct(0.99),
    errors: wrong + errors,
    statuses,
    peakRss,
    // The target's own CPU per answer: unlike req/s, it does not move with what the load generator,
    // which shares the machine, gets of the cores.
    cpuPerAnswer: cpu / (ok + wrong),
  };
}

/** The disk's own pace: 80-byte appends each followed by fdatasync, as the journal does. */
export function fdatasyncProbe(dir, seconds) {
  const path = join(dir, 'fdatasync-probe');
  const fd = openSync(path, 'wx', 0o600);
  const line = Buffer.from(`${'x'.repeat(79)}\n`);
  let count = 0;
  const t0 = performance.now();
  try {
    while (performance.now() - t0 < seconds * 1000) {
      writeSync(fd, line);
      fdatasyncSync(fd);
      count++;
    }
  } finally {
    closeSync(fd);
  }
  return count / ((performance.now() - t0) / 1000);
}

export function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const mid = v.length >> 1;
  return v.length % 2 === 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

export function envNumber(name, fallback, min) {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!(value >= min)) throw new Error(`${name} must be a number ≥ ${min}, got "${raw}"`);
  return value;
}

/** Date, node, CPU, kernel and the filesystem the data directories live on (fsync cost depends on it). */
export function machine() {
  const cpuinfo = readFileSync('/proc/cpuinfo', 'utf8');
  const cpu = /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? 'unknown';
  const dir = process.env.BENCH_TMPDIR ?? tmpdir();
  const mounts = readFileSync('/proc/mounts', 'utf8')
    .split('\n')
    .map((l) => l.split(' '))
    .filter((f) => f.length > 2);
  const mount = mounts
    .filter(([, point]) => dir === point || dir.startsWith(point.endsWith('/') ? point : `${point}/`))
    .sort((a, b) => b[1].length - a[1].length)[0];
  return {
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    node: process.version,
    cpu: `${cpu} × ${cpus().length}`,
    kernel: release(),
    dataFs: `${dir} (${mount?.[2] ?? 'unknown'})`,
    /** Other work on the machine skews every figure: the 1-minute load average when the run ends. */
    load: loadavg()[0].toFixed(2),
  };
}

/** Replaces the block between `<!-- name -->` markers in `file` (appending it the first time). */
export function writeSection(file, name, markdown) {
  let text = existsSync(file)
    ? readFileSync(file, 'utf8')
    : '# Pet Store API v1: benchmark results\n\nWritten by `bench/run.js` and `bench/profile.js`; see the header of `bench/run.js`.\n';
  const begin = `<!-- ${name} -->`;
  const end = `<!-- /${name} -->`;
  const block = `${begin}\n${markdown.trim()}\n${end}`;
  const i = text.indexOf(begin);
  const j = text.indexOf(end);
  text = i !== -1 && j > i ? text.slice(0, i) + block + text.slice(j + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, text);
}

export const fmt = {
  int: (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString('en-US') : '–'),
  ms: (x) =>
    Number.isFinite(x) ? (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : Math.round(x).toLocaleString('en-US')) : '–',
  mb: (kb) => (Number.isFinite(kb) ? (kb / 1024).toFixed(1) : '–'),
  ratio: (x) => (Number.isFinite(x) ? `${x < 10 ? x.toFixed(2) : x.toFixed(1)}×` : '–'),
};

const keepAlive = new Agent({ keepAlive: true });

/** A request's answer: its status, body bytes, and when its last byte arrived. */
export function call(origin, method, path, { headers = {}, body } = {}) {
  return new Promise((resolve, reject) => {
    const req = request(
      `${origin}${path}`,
      {
        method,
        agent: keepAlive,
        headers: { ...AUTH, ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), at: performance.now() }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** An open stream of `origin` after the pet `after`: the arrival time of each event, by pet id. */
export function openStream(origin, after) {
  return new Promise((resolve, reject) => {
    const arrivals = new Map();
    const req = request(
      `${origin}/v1/pets?after=${after}`,
      { agent: false, headers: { ...AUTH, accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`the stream answered ${res.statusCode}`));
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => {
          const at = performance.now();
          text += chunk;
          for (const [, id] of text.matchAll(/^id: (\d+)$/gm))
            if (!arrivals.has(Number(id))) arrivals.set(Number(id), at);
          text = text.slice(text.lastIndexOf('\n\n') + 2);
        });
        resolve({ arrivals, close: () => req.destroy() });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
