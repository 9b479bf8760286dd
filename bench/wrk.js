/**
 * `node bench/run.js --wrk`: the server against the lean floor (bench/floor.js) with wrk as the load
 * generator, in a process of its own (issue 34): autocannon inside the runner shares its event loop
 * with the bookkeeping and takes its CPU from the same two cores in another way than wrk does. For
 * each of GET /v1/pets?limit=20 and GET /v1/pets/{id} (random id of 1,000) the floor, the floor with
 * the contract's headers, the server, the server without its request log (`--log-level error`) and
 * Fastify 5 answering as the floor with headers does (bench/fastify.js; issue 34's target is to be
 * ahead of it) take turns of BENCH_WRK_SECONDS (3) each, who goes first
 * rotating, BENCH_ROUNDS (5) times; then durable POST /v1/pets against the floor's in-memory create at
 * 64 connections. Reported beside req/s: each process's CPU per answer, utime + stime from
 * /proc/<pid>/stat over the turn divided by the answers wrk counted. Ratios are the median of each
 * round's own ratio. BENCH_WRK_CONNECTIONS (10,50) are the GETs' connection counts; wrk runs -t1.
 * Fastify is no dependency of this project: it is loaded from BENCH_FASTIFY_DIR (a directory holding
 * node_modules/fastify), else installed once into a cache outside the repository; without either the
 * run goes on without it and says so.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  cpuTime,
  envNumber,
  fmt,
  get,
  KEY,
  machine,
  median,
  removeDir,
  ROOT,
  start,
  stop,
  tempDir,
  writeSection,
} from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const run = promisify(execFile);
const ROUNDS = envNumber('BENCH_ROUNDS', 5, 1);
const SECONDS = envNumber('BENCH_WRK_SECONDS', 3, 1);
const CONNECTIONS = (process.env.BENCH_WRK_CONNECTIONS ?? '10,50').split(',').map(Number);
const POST_CONNECTIONS = 64;
const RESULTS = join(ROOT, 'bench/results.md');
const FASTIFY_CACHE = join(tmpdir(), 'petstore-bench-fastify');
const progress = (text) => process.stderr.write(`${text}\n`);

const SCRIPTS = {
  list: '',
  one: 'request = function() return wrk.format(nil, "/v1/pets/" .. math.random(1000)) end\n',
  post: 'wrk.method = "POST"\nwrk.headers["Content-Type"] = "application/json"\nwrk.body = \'{"name":"bench","categoryId":7,"status":"available"}\'\n',
};
const PATHS = { list: '/v1/pets?limit=20', one: '/v1/pets/1', post: '/v1/pets' };

/** One wrk turn against `target`: { rps, answers, errors, cpuPerAnswer (µs) }. */
async function turn(target, load, connections, scripts) {
  const args = ['-t1', `-c${connections}`, `-d${SECONDS}s`, '-H', `Authorization: Bearer ${KEY}`, '--latency'];
  if (scripts[load] !== undefined) args.push('-s', scripts[load]);
  args.push(`${target.origin}${PATHS[load]}`);
  const cpu0 = cpuTime(target.pid);
  const { stdout } = await run('wrk', args, { timeout: (SECONDS + 30) * 1000 });
  const cpu1 = cpuTime(target.pid);
  const answers = Number(/(\d+) requests in/.exec(stdout)?.[1]);
  const errors =
    Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0) +
    Number(
      /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/
        .exec(stdout)
        ?.slice(1)
        .reduce((a, b) => a + Number(b), 0) ?? 0,
    );
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]),
    answers,
    errors,
    cpuPerAnswer: (cpu1 - cpu0) / answers,
  };
}

/**
 * Where Fastify can be loaded from and its version: BENCH_FASTIFY_DIR as it is, else FASTIFY_CACHE,
 * where fastify@5 is installed the first time (kept outside the repository: no dependency of ours, no
 * lock file touched). Undefined, said in one line, when neither has it.
 */
async function findFastify() {
  const dir = process.env.BENCH_FASTIFY_DIR || FASTIFY_CACHE;
  const manifest = join(dir, 'node_modules/fastify/package.json');
  if (!existsSync(manifest) && dir === FASTIFY_CACHE) {
    progress(`installing fastify@5 into ${dir}`);
    try {
      await run(
        'npm',
        ['install', '--no-save', '--no-package-lock', '--no-audit', '--no-fund', '--prefix', dir, 'fastify@5'],
        { timeout: 300_000 },
      );
    } catch (error) {
      // Any failure of npm (missing, offline, refused, killed at the timeout) only leaves Fastify out.
      const said = /^npm error .*$/m.exec(error.stderr ?? '')?.[0] ?? error.message; // e.g. "npm error code ECONNREFUSED"
      progress(`Fastify not measured: npm install fastify@5 failed (${said})`);
      return undefined;
    }
  }
  if (!existsSync(manifest)) {
    progress(`Fastify not measured: no ${manifest}`);
    return undefined;
  }
  return { dir, version: JSON.parse(readFileSync(manifest, 'utf8')).version };
}

/** What makes Fastify's figures comparable: it answers what the floor with headers answers, and refuses a wrong key. */
async function sameAnswers(fastify, headers) {
  const problems = [];
  // The same header names and values, but for those that change with every answer or with the server's
  // settings (Keep-Alive's timeout), and the media type alone of Content-Type: Fastify adds a charset.
  const shown = (r) =>
    Object.entries(r.headers)
      .filter(([n]) => n !== 'date' && n !== 'keep-alive')
      .map(([n, v]) => (n === 'x-request-id' ? n : `${n}: ${n === 'content-type' ? v.split(';')[0] : v}`))
      .sort()
      .join('; ');
  for (const path of ['/v1/pets?limit=20', '/v1/pets/7']) {
    const [f, h] = await Promise.all([get(fastify.origin, path), get(headers.origin, path)]);
    if (f.status !== h.status || f.body !== h.body || shown(f) !== shown(h))
      problems.push(
        `${path}: Fastify ${f.status} [${shown(f)}], the floor with headers ${h.status} [${shown(h)}]${f.body === h.body ? '' : ', bodies differ'}`,
      );
  }
  const refused = await get(fastify.origin, '/v1/pets', { authorization: 'Bearer wrong-key' });
  if (refused.status !== 401) problems.push(`Fastify answered ${refused.status} to a wrong key`);
  for (const p of problems) progress(`WARNING: ${p}`);
  return problems;
}

export async function wrkMode() {
  const scratch = tempDir('petstore-bench-wrk-');
  const scripts = writeScripts(scratch);
  const seed = join(scratch, 'pets.json');
  writeSnapshot(seed, 1000);
  const dirs = [];
  const targets = [];
  let compared;
  let results;
  try {
    compared = await startTargets(seed, dirs, targets);
    results = await measureRounds(compared, targets, scripts);
  } finally {
    for (const t of targets) await stop(t);
    for (const d of dirs) removeDir(d);
    removeDir(scratch);
  }
  const markdown = wrkMarkdown(wrkRows(results), compared);
  console.log(markdown);
  writeSection(RESULTS, 'wrk', markdown);
}

/** wrk's Lua scripts in `scratch`, by load. */
function writeScripts(scratch) {
  const scripts = {};
  for (const [name, text] of Object.entries(SCRIPTS)) {
    if (text === '') continue;
    scripts[name] = join(scratch, `${name}.lua`);
    writeFileSync(scripts[name], text);
  }
  return scripts;
}

/**
 * The server on a copy of `seed`, the floor, the floor with headers, the server without its request log, and
 * Fastify when it can be had; each pushed to `targets` (and its data directory to `dirs`) as it starts.
 */
async function startTargets(seed, dirs, targets) {
  const dir = tempDir();
  seedDirectory(dir, seed);
  dirs.push(dir);
  const server = await start('server', { dataDir: dir });
  targets.push(server);
  const floor = await start('floor');
  targets.push(floor);
  const headers = await start('headers');
  targets.push(headers);
  // The server without its request log, to say what the log (on by default) costs.
  const quietDir = tempDir();
  seedDirectory(quietDir, seed);
  dirs.push(quietDir);
  targets.push(await start('server', { dataDir: quietDir, serverArgs: ['--log-level', 'error'], as: 'quiet' }));
  const found = await findFastify();
  // A Fastify that cannot be loaded or does not answer (start's error holds its stderr) is left out.
  const fastify =
    found &&
    (await start('fastify', { serverArgs: ['--fastify-dir', found.dir] }).catch((error) =>
      progress(`Fastify not measured: ${error.message.replace(/\s+/g, ' ').slice(0, 300)}`),
    ));
  if (!fastify) return { server, floor, fastifyNote: "Fastify not measured (see the run's output)", problems: [] };
  targets.push(fastify);
  return {
    server,
    floor,
    fastifyNote: `Fastify ${found.version} (bench/fastify.js, its logger off, loaded from ${found.dir})`,
    problems: await sameAnswers(fastify, headers),
  };
}

/** A warm-up, then ROUNDS rounds: every target in turn on each GET load, then the server and the floor on POST. */
async function measureRounds({ server, floor }, targets, scripts) {
  const results = {};
  const record = (key, kind, m) => {
    ((results[key] ??= {})[kind] ??= []).push(m);
    progress(
      `  ${key.padEnd(10)} ${kind.padEnd(8)} ${fmt.int(m.rps).padStart(7)}/s  cpu ${fmt.ms(m.cpuPerAnswer)} µs/answer  errors ${m.errors}`,
    );
  };
  for (const t of targets) for (const load of ['list', 'one']) await turn(t, load, CONNECTIONS[0], scripts); // warm-up
  for (let r = 0; r < ROUNDS; r++) {
    progress(`wrk round ${r + 1}/${ROUNDS}`);
    for (const load of ['list', 'one']) {
      for (const c of CONNECTIONS) {
        for (let k = 0; k < targets.length; k++) {
          const t = targets[(r + k) % targets.length];
          record(`${load}@${c}`, t.kind, await turn(t, load, c, scripts));
        }
      }
    }
    for (const t of r % 2 === 0 ? [server, floor] : [floor, server])
      record(`post@${POST_CONNECTIONS}`, t.kind, await turn(t, 'post', POST_CONNECTIONS, scripts));
  }
  return results;
}

/** The table's rows: each GET load at each connection count, then the POST. */
function wrkRows(results) {
  // A kind not measured (Fastify when it could not be had) shows as '–'.
  const ratio = (key, a, b, field) =>
    median((results[key][a] ?? []).map((x, i) => x[field] / results[key][b]?.[i][field]));
  const stat = (key, kind, field) => median((results[key][kind] ?? []).map((x) => x[field]));
  const errors = (key) =>
    Object.values(results[key])
      .flat()
      .reduce((sum, x) => sum + x.errors, 0);
  const rows = [];
  const label = { list: 'GET /v1/pets?limit=20', one: 'GET /v1/pets/{id}' };
  for (const load of ['list', 'one']) {
    for (const c of CONNECTIONS) {
      const key = `${load}@${c}`;
      rows.push(
        `| ${label[load]}, ${c} conn. | ${fmt.int(stat(key, 'server', 'rps'))} | ${fmt.int(stat(key, 'floor', 'rps'))} | ${fmt.int(stat(key, 'headers', 'rps'))} | ` +
          `${fmt.int(stat(key, 'fastify', 'rps'))} | ${fmt.ratio(ratio(key, 'server', 'floor', 'rps'))} | ${fmt.ratio(ratio(key, 'server', 'fastify', 'rps'))} | ` +
          `${fmt.ms(stat(key, 'server', 'cpuPerAnswer'))} | ${fmt.ms(stat(key, 'floor', 'cpuPerAnswer'))} | ${fmt.ms(stat(key, 'headers', 'cpuPerAnswer'))} | ` +
          `${fmt.ms(stat(key, 'fastify', 'cpuPerAnswer'))} | ${fmt.ratio(ratio(key, 'server', 'floor', 'cpuPerAnswer'))} | ${fmt.ratio(ratio(key, 'server', 'fastify', 'cpuPerAnswer'))} | ` +
          `${fmt.ratio(ratio(key, 'server', 'quiet', 'rps'))} | ${fmt.ratio(ratio(key, 'server', 'quiet', 'cpuPerAnswer'))} | ${errors(key)} |`,
      );
    }
  }
  const post = `post@${POST_CONNECTIONS}`;
  rows.push(
    `| POST /v1/pets (durable; the floor in memory), ${POST_CONNECTIONS} conn. | ${fmt.int(stat(post, 'server', 'rps'))} | ${fmt.int(stat(post, 'floor', 'rps'))} | | | ` +
      `${fmt.ratio(ratio(post, 'server', 'floor', 'rps'))} | | ${fmt.ms(stat(post, 'server', 'cpuPerAnswer'))} | ${fmt.ms(stat(post, 'floor', 'cpuPerAnswer'))} | | | ` +
      `${fmt.ratio(ratio(post, 'server', 'floor', 'cpuPerAnswer'))} | | | | ${errors(post)} |`,
  );
  return rows;
}

function wrkMarkdown(rows, { fastifyNote, problems }) {
  const m = machine();
  return `## wrk against the lean floor

${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end
wrk -t1 in a process of its own; the server with its defaults (request log on, written to a file), 1,000 pets; the lean floor and the floor with the contract's headers (bench/floor.js); the server once more with \`--log-level error\` (no request log), for what the log costs; ${fastifyNote}, answering the GETs as the floor with headers does. ${ROUNDS} rounds; in each, they take turns of ${SECONDS} s per load, who goes first rotating. CPU per answer: utime + stime of the process from /proc/<pid>/stat over its turn, divided by the answers. Figures are medians over rounds; ratios the median of each round's own ratio.

| Load | Server req/s | Floor req/s | Floor + headers req/s | Fastify req/s | Server ÷ floor, req/s | Server ÷ Fastify, req/s | Server CPU µs/answer | Floor CPU µs/answer | Floor + headers CPU µs/answer | Fastify CPU µs/answer | Server ÷ floor, CPU/answer | Server ÷ Fastify, CPU/answer | Server ÷ server without request log, req/s | the same, CPU/answer | Errors |
|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
${rows.join('\n')}${problems.length === 0 ? '' : `\n\n**Fastify does not answer as the floor with headers:** ${problems.join('; ')}`}`;
}
