/**
 * Profiles the built server under the GET list load: `node bench/profile.js`. Runs it with
 * `--cpu-prof`, drives GET /v1/pets?limit=20 (BENCH_SECONDS, default 10 s, 10 connections), stops it
 * so the profile is written, and prints the top self-time functions (also written to results.md).
 * The .cpuprofile stays in BENCH_PROF_DIR (default /tmp/prof) for Chrome DevTools.
 */
import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { ROOT, envNumber, fmt, machine, measure, removeDir, start, stop, tempDir, writeSection } from './harness.js';
import { seedDirectory, writeSnapshot } from './pets.js';

const SECONDS = envNumber('BENCH_SECONDS', 10, 1);
const TOP = envNumber('BENCH_TOP', 15, 1);
const PROF_DIR = process.env.BENCH_PROF_DIR ?? '/tmp/prof';

/** Self time per function (name + script), from the samples and their time deltas. */
export function selfTimes(profile) {
  const byNode = new Map(profile.nodes.map((n) => [n.id, n]));
  const totals = new Map();
  let all = 0;
  for (let i = 0; i < profile.samples.length; i++) {
    const us = profile.timeDeltas[i + 1] ?? 0; // the time until the next sample belongs to this one
    const frame = byNode.get(profile.samples[i]).callFrame;
    const url = frame.url.startsWith('file://') ? relative(ROOT, new URL(frame.url).pathname) : frame.url;
    const name = `${frame.functionName || '(anonymous)'}${url === '' ? '' : ` ${url}:${frame.lineNumber + 1}`}`;
    totals.set(name, (totals.get(name) ?? 0) + us);
    all += us;
  }
  return { all, entries: [...totals].sort((a, b) => b[1] - a[1]) };
}

const seedDir = tempDir();
const dataDir = tempDir();
try {
  writeSnapshot(join(seedDir, 'pets.json'), 1000);
  seedDirectory(dataDir, join(seedDir, 'pets.json'));
  mkdirSync(PROF_DIR, { recursive: true });
  const before = new Set(readdirSync(PROF_DIR));
  const server = await start('server', { dataDir, nodeFlags: ['--cpu-prof', `--cpu-prof-dir=${PROF_DIR}`] });
  let m;
  try {
    m = await measure(
      server,
      { method: 'GET', path: '/v1/pets?limit=20', expect: 200 },
      { seconds: SECONDS, connections: 10 },
    );
  } finally {
    await stop(server);
  }
  const written = readdirSync(PROF_DIR)
    .filter((f) => f.endsWith('.cpuprofile') && !before.has(f))
    .sort((a, b) => statSync(join(PROF_DIR, b)).mtimeMs - statSync(join(PROF_DIR, a)).mtimeMs);
  if (written.length === 0) throw new Error(`no .cpuprofile appeared in ${PROF_DIR}`);
  const file = join(PROF_DIR, written[0]);
  const { all, entries } = selfTimes(JSON.parse(readFileSync(file, 'utf8')));
  const idle = entries.find(([name]) => name === '(idle)')?.[1] ?? 0;
  const info = machine();
  const markdown = [
    '## CPU profile: GET /v1/pets?limit=20',
    '',
    `${info.date} · node ${info.node} · ${info.cpu} · load average ${info.load} · ${SECONDS} s at 10 connections: ${fmt.int(m.rps)} req/s under the profiler, ` +
      `p99 ${fmt.ms(m.p99)} ms · profile ${file} (whole process life, start-up included)`,
    '',
    '| # | Self ms | % of all | % of busy | Function (script:line) |',
    '|--:|--:|--:|--:|---|',
    ...entries.slice(0, TOP).map(([name, us], i) => {
      const busy = name === '(idle)' ? '' : ((100 * us) / (all - idle)).toFixed(1);
      return `| ${i + 1} | ${fmt.int(us / 1000)} | ${((100 * us) / all).toFixed(1)} | ${busy} | \`${name}\` |`;
    }),
  ].join('\n');
  writeSection(join(ROOT, 'bench/results.md'), 'profile', markdown);
  console.log(markdown);
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  removeDir(seedDir);
  removeDir(dataDir);
}
