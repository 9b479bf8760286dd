/**
 * `node bench/run.js --restart`: restarts under load with systemd socket activation (issue 43).
 * bench/socket-launcher.py holds a listening socket as systemd would and starts the built server on it
 * as fd 3, on a data directory seeded with BENCH_RESTART_PETS (1,000,000) pets. 16 clients
 * (BENCH_CONNECTIONS_CREATE) create and list (limit=20), each request on a connection of its own, while
 * the launcher restarts the server BENCH_RESTARTS (3) times: SIGTERM, wait for the exit, start a new
 * one on the same socket (what `systemctl restart petstore.service` does with petstore.socket). Counts
 * failed requests (an error, or a status other than 201 and 200) and the longest wait of any request.
 * With BENCH_RESTART_KEEPALIVE=1 each client keeps its connection open between requests instead
 * (a node:http Agent with keepAlive), as a proxy in front does; its table is a section of its own.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { KEY, ROOT, envNumber, fmt, machine, removeDir, sleep, tempDir, writeSection } from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const PETS = envNumber('BENCH_RESTART_PETS', 1_000_000, 1);
const RESTARTS = envNumber('BENCH_RESTARTS', 3, 1);
const CLIENTS = envNumber('BENCH_CONNECTIONS_CREATE', 16, 1);
const KEEPALIVE = process.env.BENCH_RESTART_KEEPALIVE === '1';
const SETTLE_MS = 3000;
const RESULTS = join(ROOT, 'bench/results.md');
const progress = (text) => process.stderr.write(`${text}\n`);

/** One request on a connection of its own (or of `agent`); resolves with its status, or the error's code. */
function send(port, method, path, body, agent = false) {
  return new Promise((resolve) => {
    const type = body === undefined ? {} : { 'content-type': 'application/json' };
    const headers = { authorization: `Bearer ${KEY}`, ...type };
    const req = request({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode));
    });
    req.on('error', (error) => resolve(error.code ?? error.message));
    req.end(body);
  });
}

export async function restartMode() {
  const dir = tempDir('petstore-bench-restart-');
  const data = join(dir, 'data');
  mkdirSync(data, { mode: 0o700 });
  progress(`seeding ${PETS.toLocaleString('en-US')} pets`);
  writeSnapshot(join(dir, 'seed.json'), PETS);
  seedDirectory(data, join(dir, 'seed.json'));
  const launcher = await socketLauncher(data, dir);
  await launcher.start();
  const clients = startClients(launcher.port);
  const restarts = [];
  for (let r = 0; r < RESTARTS; r++) {
    await sleep(SETTLE_MS);
    progress(`restart ${r + 1} of ${RESTARTS}`);
    const t0 = performance.now();
    const code = await launcher.stop();
    const stopped = performance.now() - t0;
    await launcher.start();
    restarts.push({ code, stopMs: stopped, totalMs: performance.now() - t0 });
  }
  await sleep(SETTLE_MS);
  const stats = await clients.finish();
  await launcher.stop();
  launcher.end();
  const startLog = readFileSync(launcher.lastLog(), 'utf8').trim();
  removeDir(dir);
  const markdown = restartMarkdown(stats, restarts, startLog);
  writeSection(RESULTS, KEEPALIVE ? 'restart-keepalive' : 'restart', markdown);
  process.stdout.write(`${markdown}\n`);
  if (stats.failed > 0) process.exitCode = 1;
}

/**
 * bench/socket-launcher.py holding a socket, as systemd does, for servers on `data` (their logs in `dir`):
 * `start()` resolves once the new server answers /healthz, `stop()` with the exit code of the one stopped.
 */
async function socketLauncher(data, dir) {
  const server = [process.execPath, join(ROOT, 'dist/server.js'), '--data-dir', data, '--log-level', 'error'];
  const launcher = spawn('python3', [join(ROOT, 'bench/socket-launcher.py'), ...server], {
    env: { PATH: process.env.PATH, PETSTORE_API_KEYS: KEY },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: launcher.stdout })[Symbol.asyncIterator]();
  const answer = async () => (await lines.next()).value;
  const port = Number(await answer());
  let n = 0;
  return {
    port,
    // At --log-level error no "listening" line is written: up is when /healthz answers on the socket.
    async start() {
      launcher.stdin.write(`start ${join(dir, `server-${++n}.log`)}\n`);
      await answer();
      while ((await send(port, 'GET', '/healthz')) !== 200) await sleep(10);
    },
    async stop() {
      launcher.stdin.write('stop\n');
      return Number(await answer());
    },
    end: () => launcher.stdin.end(),
    lastLog: () => join(dir, `server-${n}.log`),
  };
}

/** CLIENTS clients creating and listing in turn until `finish()`, which resolves with what they counted. */
function startClients(port) {
  let running = true;
  const stats = { ok: 0, failed: 0, failures: new Map(), longest: 0, longestAt: '' };
  const client = async (c) => {
    const agent = KEEPALIVE ? new Agent({ keepAlive: true, maxSockets: 1 }) : false;
    for (let i = 0; running; i++) {
      const create = i % 2 === 0;
      const t0 = performance.now();
      const status = create
        ? await send(port, 'POST', '/v1/pets', `{"name":"restart-${c}-${i}","categoryId":7}`, agent)
        : await send(port, 'GET', '/v1/pets?limit=20', undefined, agent);
      const ms = performance.now() - t0;
      if (ms > stats.longest) [stats.longest, stats.longestAt] = [ms, create ? 'create' : 'list'];
      if (status === (create ? 201 : 200)) stats.ok += 1;
      else {
        stats.failed += 1;
        stats.failures.set(String(status), (stats.failures.get(String(status)) ?? 0) + 1);
      }
    }
    if (agent) agent.destroy();
  };
  const clients = Array.from({ length: CLIENTS }, (_, c) => client(c));
  return {
    async finish() {
      running = false;
      await Promise.all(clients);
      return stats;
    },
  };
}

function restartMarkdown(stats, restarts, startLog) {
  const m = machine();
  const failures = [...stats.failures].map(([why, count]) => `${count} × ${why}`).join(', ') || 'none';
  return [
    KEEPALIVE
      ? '## Restarts under load with socket activation, clients keeping connections open ' +
        '(`BENCH_RESTART_KEEPALIVE=1 node bench/run.js --restart`)'
      : '## Restarts under load with socket activation (`node bench/run.js --restart`)',
    '',
    `${m.date}, Node ${m.node}, ${m.cpu}, data on ${m.dataFs}, load ${m.load} at the end. A store of`,
    `${PETS.toLocaleString('en-US')} pets; ${CLIENTS} clients creating and listing (limit=20), ${
      KEEPALIVE
        ? 'each on a connection it keeps open (a new one once the server closes it)'
        : 'each request on a connection of its own'
    },`,
    `through ${RESTARTS} restarts on the socket bench/socket-launcher.py holds as systemd would`,
    '(SIGTERM, wait for the exit, start the next process on the same socket).',
    '',
    '| restart | exit code | stop (ms) | stop + load of the next (ms) |',
    '| --- | --- | --- | --- |',
    ...restarts.map((r, i) => `| ${i + 1} | ${r.code} | ${fmt.ms(r.stopMs)} | ${fmt.ms(r.totalMs)} |`),
    '',
    `Requests answered: ${fmt.int(stats.ok)}; failed: ${stats.failed} (${failures}). The longest wait of any request:`,
    `${fmt.ms(stats.longest)} ms (a ${stats.longestAt}), a connection made while one process stopped and the next`,
    "loaded, held in the socket's backlog.",
    ...(startLog === '' ? [] : ['', `The last server's stderr: \`${startLog.split('\n')[0]}\``]),
  ].join('\n');
}
