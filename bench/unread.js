/**
 * `node bench/run.js --unread`: answers nobody reads (issue 41). The server runs with
 * --max-connections M (BENCH_UNREAD_LIMITS, 1000 and 100), over HTTP and over TLS; a flooder (python3,
 * for SO_RCVBUF, which Node cannot set on a TCP socket) holds M + 10 connections from 127.0.0.2, each
 * with SO_RCVBUF 4096, each sending `GET /v1/openapi.json` BENCH_UNREAD_PIPELINED (200) times pipelined and
 * never reading, and opens a new one as soon as one is closed. Meanwhile, every 100 ms each, a keyed
 * GET on a fresh connection and /healthz on a fresh connection from 127.0.0.1; answered means a 200
 * within 5 s. The server's RSS is read from /proc every 250 ms: idle before the flood, the peak
 * during it. BENCH_UNREAD_SECONDS (20) per case after 3 s of flood. `BENCH_UNREAD_DIST` runs another
 * build (the one before a change). Loopback only, bounded in time.
 */
import { spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { join } from 'node:path';
import { certificate } from '../scripts/test-certificate.js';
import { envNumber, freePort, KEY, machine, memory, removeDir, ROOT, sleep, tempDir, writeSection } from './harness.js';

const SECONDS = envNumber('BENCH_UNREAD_SECONDS', 20, 1);
const PIPELINED = envNumber('BENCH_UNREAD_PIPELINED', 200, 1);
const LIMITS = (process.env.BENCH_UNREAD_LIMITS ?? '1000,100').split(',').map(Number);
const MODES = (process.env.BENCH_UNREAD_MODES ?? 'http,tls').split(',');
const DIST = process.env.BENCH_UNREAD_DIST ?? join(ROOT, 'dist');
const LABEL = process.env.BENCH_UNREAD_LABEL ?? 'this build';
const RESULTS = join(ROOT, 'bench/results.md');
const progress = (text) => process.stderr.write(`${text}\n`);

/** The flooder: connections with a 4 kB receive buffer that pipeline and never read, reopened when closed. */
const FLOODER = String.raw`
import select, socket, ssl, sys, time
port, count, pipelined = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
tls, seconds = sys.argv[4] == 'tls', float(sys.argv[5])
payload = b'GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n\r\n' * pipelined
context = ssl._create_unverified_context() if tls else None
poll = select.poll()
open_ = {}
opened = 0
def open_one():
    global opened
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.bind(('127.0.0.2', 0))
    s.settimeout(2)
    try:
        s.connect(('127.0.0.1', port))
        if tls:
            s = context.wrap_socket(s, server_hostname='127.0.0.1')
        s.settimeout(2)
        s.sendall(payload)
    except OSError:
        s.close()
        return
    opened += 1
    open_[s.fileno()] = s
    poll.register(s.fileno(), select.POLLRDHUP | select.POLLERR | select.POLLHUP)
until = time.monotonic() + seconds
for _ in range(count):
    open_one()
while time.monotonic() < until:
    for fd, _ in poll.poll(100):
        poll.unregister(fd)
        open_.pop(fd).close()
    while len(open_) < count and time.monotonic() < until:
        before = len(open_)
        open_one()
        if len(open_) == before:
            break
print(opened, flush=True)
`;

/** Starts the server of DIST on free ports, logging only errors (the flood would fill the log), once it answers. */
async function startServer(limit, tls, dataDir) {
  const [port, metricsPort] = [await freePort(), await freePort()];
  const args = [
    join(DIST, 'server.js'),
    '--port',
    String(port),
    '--host',
    '127.0.0.1',
    '--data-dir',
    dataDir,
    '--metrics-port',
    String(metricsPort),
    '--max-connections',
    String(limit),
    '--log-level',
    'error',
  ];
  if (tls) {
    const { cert, key } = certificate(join(dataDir, '..'), 'bench');
    args.push('--tls-cert', cert, '--tls-key', key);
  }
  const env = { ...process.env, PETSTORE_API_KEYS: KEY };
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'inherit'] });
  const origin = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
  const deadline = performance.now() + 30_000;
  while ((await ask(origin, '/healthz', false)) !== 'ok') {
    if (performance.now() > deadline || child.exitCode !== null) throw new Error(`no answer from ${origin}`);
    await sleep(100);
  }
  return { child, origin, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics` };
}

/** One GET on a fresh connection from 127.0.0.1; 'ok' for a 200 within 5 s, else what happened. */
function ask(origin, path, keyed) {
  return new Promise((resolve) => {
    const tls = origin.startsWith('https:');
    const url = new URL(path, origin);
    const req = (tls ? httpsRequest : httpRequest)(
      url,
      {
        agent: false,
        localAddress: '127.0.0.1',
        rejectUnauthorized: false,
        headers: keyed ? { authorization: `Bearer ${KEY}` } : {},
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

/** Asks each kind every 100 ms for `seconds`: the share answered of each. */
async function client(origin, seconds) {
  const kinds = { keyed: () => ask(origin, '/v1/pets?limit=1', true), healthz: () => ask(origin, '/healthz', false) };
  const counts = Object.fromEntries(Object.keys(kinds).map((k) => [k, { asked: 0, answered: 0, failures: {} }]));
  const until = performance.now() + seconds * 1000;
  await Promise.all(
    Object.entries(kinds).map(async ([name, once]) => {
      while (performance.now() < until) {
        const next = performance.now() + 100;
        counts[name].asked++;
        // Each asked on time, whatever the last one waits for.
        void once().then((outcome) => {
          if (outcome === 'ok') counts[name].answered++;
          else counts[name].failures[outcome] = (counts[name].failures[outcome] ?? 0) + 1;
        });
        await sleep(Math.max(0, next - performance.now()));
      }
    }),
  );
  await sleep(5500);
  return counts;
}

async function oneCase(limit, mode) {
  const dir = tempDir();
  const dataDir = join(dir, 'data');
  const server = await startServer(limit, mode === 'tls', dataDir);
  try {
    await sleep(1000);
    const idle = memory(server.child.pid).rss;
    let peak = idle;
    const sampler = setInterval(() => (peak = Math.max(peak, memory(server.child.pid)?.rss ?? 0)), 250);
    const { port } = new URL(server.origin);
    const flooderArgs = ['-c', FLOODER, port, String(limit + 10), String(PIPELINED), mode, String(SECONDS + 3)];
    const flooder = spawn('python3', flooderArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    let opened = '';
    flooder.stdout.on('data', (text) => (opened += text));
    const flooded = new Promise((resolve) => flooder.once('exit', resolve));
    await sleep(3000);
    const counts = await client(server.origin, SECONDS);
    await flooded;
    clearInterval(sampler);
    const scraped = await new Promise((resolve) =>
      httpRequest(server.metricsUrl, (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve(text));
      })
        .on('error', () => resolve(''))
        .end(),
    );
    const count = (pattern) => Number(new RegExp(`^${pattern} (\\d+)$`, 'm').exec(scraped)?.[1] ?? NaN);
    return {
      limit,
      mode,
      counts,
      opened: Number(opened.trim()),
      idleMb: idle / 1024,
      peakMb: peak / 1024,
      evicted: count('petstore_http_evicted_connections_total'),
      refused: count('petstore_http_refused_connections_total'),
      ended: ['send_timeout', 'pipelining_limit', 'unsent_limit'].map((why) =>
        count(`petstore_http_ended_connections_total\\{reason="${why}"\\}`),
      ),
    };
  } finally {
    server.child.kill('SIGKILL');
    removeDir(dir);
  }
}

export async function unreadMode() {
  const rows = [];
  for (const mode of MODES) {
    for (const limit of LIMITS) {
      progress(`unread: ${LABEL}, ${mode}, --max-connections ${limit}`);
      const row = await oneCase(limit, mode);
      progress(`  ${JSON.stringify(row)}`);
      rows.push(row);
    }
  }
  const m = machine();
  const share = ({ asked, answered, failures }) => {
    const why = Object.entries(failures)
      .map(([what, n]) => `${n} ${what}`)
      .join(', ');
    const percent = ((100 * answered) / Math.max(1, asked)).toFixed(1);
    return `${percent} % (${answered} of ${asked}${why === '' ? '' : `; ${why}`})`;
  };
  const ended = (r) => (r.ended.some(Number.isNaN) ? '–' : r.ended.join(' / '));
  const row = (r) => [
    LABEL,
    r.mode,
    r.limit,
    r.opened,
    r.evicted,
    r.refused,
    ended(r),
    share(r.counts.keyed),
    share(r.counts.healthz),
    `${r.idleMb.toFixed(0)} → ${r.peakMb.toFixed(0)} MB`,
  ];
  const table = rows.map((r) => `| ${row(r).join(' | ')} |`).join('\n');
  writeSection(
    RESULTS,
    `unread-${LABEL.replace(/\W+/g, '-')}`,
    `## Answers nobody reads: ${LABEL}

${m.date} · node ${m.node} · ${m.cpu} · load average ${m.load} at the end
\`node bench/run.js --unread\`: --max-connections M; a flooder holds M + 10 connections from 127.0.0.2 (SO_RCVBUF \
4096), each sending \`GET /v1/openapi.json\` ${PIPELINED}× pipelined and never reading, and opens a new one as soon \
as one closes; for ${SECONDS} s (after 3 s of flood) a client on 127.0.0.1 asks every 100 ms for each column, on a \
fresh connection; answered means a 200 within 5 s. RSS read from /proc: before the flood → the peak during it. \
Ended: send timeout / more than 64 unanswered / unsent bytes in all.

| build | | M | opened by the flood | closed for room | refused | ended | keyed GET, fresh connection | /healthz, fresh \
connection | RSS |
|---|---|--:|--:|--:|--:|---|--:|--:|--:|
${table}`,
  );
  process.stdout.write(`${table}\n`);
}
