/**
 * `node bench/run.js --wrk`: the server against the lean floor (bench/floor.js) with wrk as the load
 * generator, in a process of its own (issue 34): autocannon inside the runner shares its event loop
 * with the bookkeeping and takes its CPU from the same two cores in another way than wrk does. For
 * each of GET /v1/pets?limit=20 and GET /v1/pets/{id} (random id of 1,000) the floor, the floor with
 * the contract's headers, the server and the server without its request log (`--log-level error`)
 * take turns of BENCH_WRK_SECONDS (3) each, who goes first
 * rotating, BENCH_ROUNDS (5) times; then durable POST /v1/pets against the floor's in-memory create at
 * 64 connections. Reported beside req/s: each process's CPU per answer, utime + stime from
 * /proc/<pid>/stat over the turn divided by the answers wrk counted. Ratios are the median of each
 * round's own ratio. BENCH_WRK_CONNECTIONS (10,50) are the GETs' connection counts; wrk runs -t1.
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { cpuTime, envNumber, fmt, KEY, machine, median, removeDir, ROOT, start, stop, tempDir, writeSection } from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const run = promisify(execFile);
const ROUNDS = envNumber('BENCH_ROUNDS', 5, 1);
const SECONDS = envNumber('BENCH_WRK_SECONDS', 3, 1);
const CONNECTIONS = (process.env.BENCH_WRK_CONNECTIONS ?? '10,50').split(',').map(Number);
const POST_CONNECTIONS = 64;
const RESULTS = join(ROOT, 'bench/results.md');
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
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0) + Number(/Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout)?.slice(1).reduce((a, b) => a + Number(b), 0) ?? 0);
  return { rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(stdout)?.[1]), answers, errors, cpuPerAnswer: (cpu1 - cpu0) / answers };
}

export async function wrkMode() {
  const scratch = tempDir('petstore-bench-wrk-');
  const scripts = {};
  for (const [name, text] of Object.entries(SCRIPTS)) {
    if (text === '') continue;
    scripts[name] = join(scratch, `${name}.lua`);
    writeFileSync(scripts[name], text);
  }
  const seed = join(scratch, 'pets.json');
  writeSnapshot(seed, 1000);
  const dir = tempDir();
  seedDirectory(dir, seed);
  const targets = [];
  const dirs = [dir];
  const results = {};
  const record = (key, kind, m) => {
    ((results[key] ??= {})[kind] ??= []).push(m);
    progress(`  ${key.padEnd(10)} ${kind.padEnd(8)} ${fmt.int(m.rps).padStart(7)}/s  cpu ${fmt.ms(m.cpuPerAnswer)} µs/answer  errors ${m.errors}`);
  };
  try {
    const server = await start('server', { dataDir: dir });
    const floor = await start('floor');
    const headers = await start('headers');
    // The server without its request log, to say what the log (on by default) costs.
    const quietDir = tempDir();
    seedDirectory(quietDir, seed);
    dirs.push(quietDir);
    const quiet = await start('server', { dataDir: quietDir, serverArgs: ['--log-level', 'error'], as: 'quiet' });
    targets.push(server, floor, headers, quiet);
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
      for (const t of r % 2 === 0 ? [server, floor] : [floor, server]) record(`post@${POST_CONNECTIONS}`, t.kind, await turn(t, 'post', POST_CONNECTIONS, scripts));
    }
  } finally {
    for (const t of targets) await stop(t);
    for (const d of dirs) removeDir(d);
    removeDir(scratch);
  }
  const m = machine();
  const ratio = (key, a, b, field) => median(results[key][a].map((x, i) => x[field] / results[key][b][i][field]));
  const stat = (key, kind, field) => median(results[key][kind].map((x) => x[field]));
  const errors = (key) => Object.values(results[key]).flat().reduce((sum, x) => sum + x.errors, 0);
  const rows = [];
  const label = { list: 'GET /v1/pets?limit=20', one: 'GET /v1/pets/{id}' };
  for (const load of ['list', 'one']) {
    for (const c of CONNECTIONS) {
      const key = `${load}@${c}`;
      rows.push(`| ${label[load]}, ${c} conn. | ${fmt.int(stat(key, 'server', 'rps'))} | ${fmt.int(stat(key, 'floor', 'rps'))} | ${fmt.int(stat(key, 'headers', 'rps'))} | ` +
        `${fmt.ratio(ratio(key, 'server', 'floor', 'rps'))} | ${fmt.ms(stat(key, 'server', 'cpuPerAnswer'))} | ${fmt.ms(stat(key, 'floor', 'cpuPerAnswer'))} | ` +
        `${fmt.ms(stat(key, 'headers', 'cpuPerAnswer'))} | ${fmt.ratio(ratio(key, 'server', 'floor', 'cpuPerAnswer'))} | ` +
        `${fmt.ratio(ratio(key, 'server', 'quiet', 'rps'))} | ${fmt.ratio(ratio(key, 'server', 'quiet', 'cpuPerAnswer'))} | ${errors(key)} |`);
    }
  }
  const post = `post@${POST_CONNECTIONS}`;
  rows.push(`| POST /v1/pets (durable; the floor in memory), ${POST_CONNECTIONS} conn. | ${fmt.int(stat(post, 'server', 'rps'))} | ${fmt.int(stat(post, 'floor', 'rps'))} | | ` +
    `${fmt.ratio(ratio(post, 'server', 'floor', 'rps'))} | ${fmt.ms(stat(post, 'server', 'cpuPerAnswer'))} | ${fmt.ms(stat(post, 'floor', 'cpuPerAnswer'))} | | ` +
    `${fmt.ratio(ratio(post, 'server', 'floor', 'cpuPerAnswer'))} | | | ${errors(post)} |`);
  const markdown = `## wrk against the lean floor

${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end
wrk -t1 in a process of its own; the server with its defaults (request log on, written to a file), 1,000 pets; the lean floor and the floor with the contract's headers (bench/floor.js); the server once more with \`--log-level error\` (no request log), for what the log costs. ${ROUNDS} rounds; in each, the four take turns of ${SECONDS} s per load, who goes first rotating. CPU per answer: utime + stime of the process from /proc/<pid>/stat over its turn, divided by the answers. Figures are medians over rounds; ratios the median of each round's own ratio.

| Load | Server req/s | Floor req/s | Floor + headers req/s | Server ÷ floor, req/s | Server CPU µs/answer | Floor CPU µs/answer | Floor + headers CPU µs/answer | Server ÷ floor, CPU/answer | Server ÷ server without request log, req/s | the same, CPU/answer | Errors |
|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|
${rows.join('\n')}`;
  console.log(markdown);
  writeSection(RESULTS, 'wrk', markdown);
}
