/**
 * `node bench/run.js --slots`: whether clients that send no request can take the connection slots
 * away from those that do (issue 29). The server runs with --max-connections M; a flooder (a process of
 * its own) holds M + BENCH_SLOTS_EXTRA (100) connections from BENCH_SLOTS_ADDRESSES (50) loopback addresses
 * (127.0.0.2 to 127.0.0.51, all routed to lo), each silent, or sending one byte of a request line every 3 s,
 * or sending one `GET /healthz` and holding the connection after its answer, and opens a new one as
 * soon as one is closed. Meanwhile a client on 127.0.0.1 asks, every 20 ms each: a keyed GET on a
 * fresh connection, the same written 30 ms after the connect (a client a round trip or two away), a
 * keyed GET on one keep-alive connection, and /healthz on a fresh connection; each counts as answered
 * with a 200 within 5 s. BENCH_SLOTS_SECONDS (15) per case, after 2 s for the flood to fill the
 * slots. Loopback only, bounded in time.
 */
import { spawn } from 'node:child_process';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  envNumber,
  fmt,
  get,
  KEY,
  machine,
  removeDir,
  ROOT,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
} from './harness.js';

const SECONDS = envNumber('BENCH_SLOTS_SECONDS', 15, 1);
const EXTRA = envNumber('BENCH_SLOTS_EXTRA', 100, 1);
const ADDRESSES = envNumber('BENCH_SLOTS_ADDRESSES', 50, 1);
const LIMITS = (process.env.BENCH_SLOTS_LIMITS ?? '1000,60').split(',').map(Number);
/** What each flood connection does: nothing, a byte every 3 s, or one cheap request and then nothing. */
const FLOODS = { silent: 'silent', drip: 'a byte every 3 s', once: 'one GET /healthz, then held' };
const KINDS = (process.env.BENCH_SLOTS_KINDS ?? 'silent,drip,once').split(',');
const RESULTS = join(ROOT, 'bench/results.md');
const progress = (text) => process.stderr.write(`${text}\n`);

/** One request; resolves with 'ok' when it is answered 200 within 5 s, else what happened. */
function ask(origin, path, agent, auth) {
  return new Promise((resolve) => {
    const url = new URL(path, origin);
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        agent,
        localAddress: '127.0.0.1',
        headers: auth ? { authorization: `Bearer ${KEY}` } : {},
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode === 200 ? 'ok' : String(res.statusCode)));
        res.on('error', (error) => resolve(error.code ?? error.message));
      },
    );
    req.setTimeout(5000, () => req.destroy(Object.assign(new Error('no answer in 5 s'), { code: 'timeout' })));
    req.on('error', (error) => resolve(error.code ?? error.message));
    req.end();
  });
}

/** A keyed GET on a fresh connection, written `delayMs` after its connect; 'ok' when a 200 comes within 5 s. */
function askLate(origin, delayMs) {
  return new Promise((resolve) => {
    const url = new URL(origin);
    const socket = connect({ port: Number(url.port), host: url.hostname, localAddress: '127.0.0.1' });
    let data = '';
    let outcome;
    const done = (what) => {
      outcome ??= what;
      clearTimeout(timer);
      socket.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => done('timeout'), 5000 + delayMs);
    socket.on('error', (error) => done(error.code ?? error.message));
    socket.on('close', () => done(data === '' ? 'closed' : (/^HTTP\/1\.1 (\d+)/.exec(data)?.[1] ?? 'closed')));
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      if (/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n/.test(data)) done('ok');
    });
    socket.once('connect', () =>
      setTimeout(
        () =>
          socket.writable &&
          socket.write(`GET /v1/pets?limit=1 HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: Bearer ${KEY}\r\n\r\n`),
        delayMs,
      ),
    );
  });
}

/** Asks each kind every 20 ms for `seconds`; the share answered of each. */
async function client(origin, seconds) {
  const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
  const kinds = {
    fresh: () => ask(origin, '/v1/pets?limit=1', false, true),
    late: () => askLate(origin, 30),
    keepAlive: () => ask(origin, '/v1/pets?limit=1', keepAlive, true),
    healthz: () => ask(origin, '/healthz', false, false),
  };
  const counts = Object.fromEntries(Object.keys(kinds).map((k) => [k, { asked: 0, answered: 0, failures: {} }]));
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Object.entries(kinds).map(async ([name, once]) => {
      while (performance.now() < until) {
        const next = performance.now() + 20;
        counts[name].asked++;
        const outcome = await once();
        if (outcome === 'ok') counts[name].answered++;
        else counts[name].failures[outcome] = (counts[name].failures[outcome] ?? 0) + 1;
        await sleep(Math.max(0, next - performance.now()));
      }
    }),
  );
  keepAlive.destroy();
  return counts;
}

/** The flooder's side (a child process): holds `count` connections, reopening each as it closes. */
async function flood(port, count, kind) {
  let opened = 0;
  let stopping = false;
  const openOne = (i) => {
    if (stopping) return;
    const socket = connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${2 + (i % ADDRESSES)}` });
    opened++;
    let timer;
    socket.on('error', () => {});
    // Read what comes (a /healthz answer): a socket whose data is never read never sees its close either.
    socket.resume();
    socket.once('connect', () => {
      if (kind === 'once') socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
      if (kind !== 'drip') return;
      let at = 0;
      const line = 'GET /v1/pets HTTP/1.1\r\n';
      timer = setInterval(() => socket.write(line[at++ % line.length]), 3000);
    });
    socket.once('close', () => {
      clearInterval(timer);
      setImmediate(() => openOne(i));
    });
  };
  for (let i = 0; i < count; i++) openOne(i);
  process.on('message', () => {
    stopping = true;
    process.send?.({ opened });
    setTimeout(() => process.exit(0), 100);
  });
}

async function oneCase(limit, kind) {
  const dataDir = tempDir();
  const server = await start('metrics', { dataDir, serverArgs: ['--max-connections', String(limit)] });
  const { port } = new URL(server.origin);
  const flooder = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), '--flooder', port, String(limit + EXTRA), kind],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  try {
    await sleep(2000);
    const counts = await client(server.origin, SECONDS);
    const opened = await new Promise((resolve) => {
      flooder.once('message', (m) => resolve(m.opened));
      flooder.send('stop');
    });
    const scraped = (await get(new URL(server.metricsUrl).origin, '/metrics', {})).body;
    const count = (name) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(scraped)?.[1] ?? NaN);
    return {
      limit,
      kind,
      counts,
      opened,
      evicted: count('petstore_http_evicted_connections_total'),
      refused: count('petstore_http_refused_connections_total'),
    };
  } finally {
    flooder.kill();
    await stop(server, 15_000);
    removeDir(dataDir);
  }
}

export async function slotsMode() {
  const rows = [];
  for (const limit of LIMITS) {
    for (const kind of KINDS) {
      progress(`slots: --max-connections ${limit}, ${FLOODS[kind]}`);
      const row = await oneCase(limit, kind);
      progress(`  ${JSON.stringify(row)}`);
      rows.push(row);
    }
  }
  const m = machine();
  const share = ({ asked, answered, failures }) => {
    const why = Object.entries(failures)
      .map(([what, n]) => `${n} ${what}`)
      .join(', ');
    return `${((100 * answered) / Math.max(1, asked)).toFixed(1)} % (${answered} of ${asked}${why === '' ? '' : `; ${why}`})`;
  };
  const table = rows
    .map(
      (r) =>
        `| ${r.limit} | ${FLOODS[r.kind]} | ${fmt.int(r.opened)} | ${fmt.int(r.evicted)} | ${fmt.int(r.refused)} | ${share(r.counts.fresh)} | ${share(r.counts.late)} | ${share(r.counts.keepAlive)} | ${share(r.counts.healthz)} |`,
    )
    .join('\n');
  writeSection(
    RESULTS,
    'slots',
    `## Connection slots under a flood of connections without requests

${m.date} · node ${m.node} · ${m.cpu} · load average ${m.load} at the end
\`node bench/run.js --slots\`: --max-connections M; a flooder holds M + ${EXTRA} connections from ${ADDRESSES} addresses (127.0.0.2–127.0.0.${1 + ADDRESSES}) and opens a new one as soon as one closes; meanwhile, for ${SECONDS} s (after 2 s of flood), a client on 127.0.0.1 asks every 20 ms for each column; answered means a 200 within 5 s (with 30 ms more for the late write).

| M | flood connections | opened by the flood | closed for room | refused | keyed GET, fresh connection | the same, written 30 ms after the connect | keyed GET, keep-alive | /healthz, fresh connection |
|--:|---|--:|--:|--:|--:|--:|--:|--:|
${table}`,
  );
  process.stdout.write(`${table}\n`);
}

if (process.argv[2] === '--flooder') flood(Number(process.argv[3]), Number(process.argv[4]), process.argv[5]);
