/**
 * `node bench/run.js --replication`: what continuous replication (--replicate-to, issue 32) costs.
 * In every round two servers, fresh, on copies of one seeded data directory (1,000 pets): one without
 * replication (the floor of this mode) and one replicating to a directory on the same file system at
 * the default interval (1 s). Durable creates at BENCH_CONNECTIONS_CREATE (16) connections, then
 * GET /v1/pets?limit=20 at 10, each in interleaved turns (measureInterleaved); medians over rounds,
 * and the ratio of each round's replicating figure to its floor. After the last round the
 * replicating server is stopped and `verify --from` checks what it shipped.
 *
 * Then the loss bound, BENCH_LOSS_RUNS times (3): a server replicating every 1 s under 16 clients
 * creating as fast as they are answered, killed with SIGKILL after 2 to 3 s, its data directory
 * removed, and `restore` from the replicas: how long before the kill the oldest acknowledged pet that
 * did not come back was acknowledged (0 when none is missing).
 */
import { spawnSync } from 'node:child_process';
import { Agent, request } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  KEY,
  ROOT,
  envNumber,
  fmt,
  machine,
  onOffErrors,
  onOffSettings,
  onOffRounds,
  onOffTable,
  removeDir,
  sleep,
  start,
  tempDir,
  writeSection,
} from './harness.js';
import { writeSnapshot } from './pets.js';

const SETTINGS = onOffSettings(5);
const RESULTS = join(ROOT, 'bench/results.md');
const LOSS_RUNS = envNumber('BENCH_LOSS_RUNS', 3, 1);
const load = createRequire(import.meta.url);
const { readLiveDirectory } = load(join(ROOT, 'dist/store/file/backup.js'));
const { nodeFileSystem } = load(join(ROOT, 'dist/lib/file-system.js'));
const progress = (text) => process.stderr.write(`${text}\n`);

/** POST one pet over `agent`; the id, or undefined once the server is gone. */
function post(origin, agent, name) {
  return new Promise((resolve) => {
    const body = JSON.stringify({ name, categoryId: 7 });
    const req = request(
      `${origin}/v1/pets`,
      {
        method: 'POST',
        agent,
        headers: {
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        let text = '';
        res
          .setEncoding('utf8')
          .on('data', (c) => (text += c))
          .on('end', () => resolve(res.statusCode === 201 ? JSON.parse(text).id : undefined));
        res.on('error', () => resolve(undefined));
      },
    );
    req.on('error', () => resolve(undefined));
    req.end(body);
  });
}

/** One machine loss under load: creates/s, pets acknowledged, lost, and the oldest lost one's age at the kill (ms). */
async function lossRun(run) {
  const dir = tempDir();
  const replica = join(tempDir(), 'replica');
  const server = await start('server', { dataDir: dir, serverArgs: ['--replicate-to', replica] });
  const acked = new Map();
  let stopping = false;
  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const began = performance.now();
  const client = async (c) => {
    for (let i = 0; !stopping; i++) {
      const id = await post(server.origin, agent, `loss ${run} c${c} #${i}`);
      if (id === undefined) return;
      acked.set(id, Date.now());
    }
  };
  const clients = Array.from({ length: 16 }, (_, c) => client(c));
  await sleep(2000 + Math.random() * 1000);
  server.child.kill('SIGKILL');
  const lostAt = Date.now();
  const seconds = (performance.now() - began) / 1000;
  stopping = true;
  await Promise.all(clients);
  agent.destroy();
  removeDir(dir);
  const target = join(tempDir(), 'restored');
  const restored = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), 'restore', target, '--from', replica], {
    encoding: 'utf8',
  });
  if (restored.status !== 0) throw new Error(`restore failed: ${restored.stderr}`);
  const { index } = await readLiveDirectory(nodeFileSystem, target);
  const missing = [...acked].filter(([id]) => index.getText(id) === undefined);
  removeDir(join(target, '..'));
  removeDir(join(replica, '..'));
  return {
    rate: acked.size / seconds,
    acked: acked.size,
    lost: missing.length,
    window: missing.length === 0 ? 0 : lostAt - Math.min(...missing.map(([, at]) => at)),
  };
}

export async function replicationMode() {
  const seed = join(tempDir(), 'pets.json');
  writeSnapshot(seed, 1000);
  let replica = '';
  let verified = '';
  const rows = await onOffRounds('replication', {
    ...SETTINGS,
    seed,
    prepareOn: () => {
      replica = join(tempDir(), 'replica');
      return ['--replicate-to', replica];
    },
    afterRound: (round) => {
      if (round === SETTINGS.rounds) verified = verify(replica);
      removeDir(join(replica, '..'));
    },
  });
  const losses = [];
  for (let run = 1; run <= LOSS_RUNS; run++) {
    progress(`replication: machine loss ${run}/${LOSS_RUNS}`);
    losses.push(await lossRun(run));
  }
  const m = machine();
  const markdown = [
    '## Replication: creates and reads with --replicate-to on and off',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${SETTINGS.rounds} rounds; in each, two fresh servers on copies of one data directory of 1,000 pets, one replicating to a directory on the same file system every 1 s (the default); ${SETTINGS.seconds} s each in ${SETTINGS.slices} interleaved turns. Medians over rounds; the ratio is the median of each round's on ÷ off.`,
    '',
    ...onOffTable(rows, SETTINGS),
    '',
    `Creates/s on ÷ off per round: ${rows.map((r) => (r.createOn.rps / r.createOff.rps).toFixed(3)).join(', ')}. Errors: ${onOffErrors(rows)}. The last round's replicas: ${verified}.`,
    '',
    `The loss bound: ${LOSS_RUNS} machine losses (SIGKILL after 2 to 3 s of 16 clients creating, each on a keep-alive connection, the data directory removed, \`restore\` from the replicas; interval 1 s):`,
    '',
    '| run | creates/s | acknowledged | lost | oldest lost pet acknowledged before the kill, ms |',
    '|--:|--:|--:|--:|--:|',
    ...losses.map(
      (l, i) => `| ${i + 1} | ${fmt.int(l.rate)} | ${fmt.int(l.acked)} | ${fmt.int(l.lost)} | ${fmt.int(l.window)} |`,
    ),
  ].join('\n');
  writeSection(RESULTS, 'replication', markdown);
  console.log(markdown);
}

/** What `verify --from` says of the replicas, on one line, with its exit status. */
function verify(replica) {
  const check = spawnSync(process.execPath, [join(ROOT, 'dist/server.js'), 'verify', '--from', replica], {
    encoding: 'utf8',
  });
  return `${check.stdout.trim().split('\n').join('; ')} (exit ${check.status})`;
}
