/**
 * `node bench/run.js --flood`: Idempotency-Keys chosen to collide against random ones (issue 29).
 * BENCH_FLOOD_KEYS (8,192) keys that all share one FNV-1a 32 hash of the bench key's scope and the
 * key (the table's hash before it was keyed), made by a Joux multicollision as a client holding a
 * pets:write key could make them; and as many random keys of the same length. For each set, in
 * every one of BENCH_ROUNDS rounds (3; the two sets take turns going first): a server on an empty
 * data directory takes one create per key over BENCH_CONNECTIONS keep-alive connections (16) while
 * /healthz is asked every 50 ms, then is stopped and started again on what it stored (spawn → first
 * answer: the keys restored). Reported: medians, and the median of each round's crafted ÷ random.
 */
import { createRequire } from 'node:module';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import {
  KEY,
  ROOT,
  envNumber,
  fmt,
  machine,
  median,
  removeDir,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
} from './harness.js';

const KEYS = envNumber('BENCH_FLOOD_KEYS', 8192, 2);
const ROUNDS = envNumber('BENCH_ROUNDS', 3, 1);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 16, 1);
const RESULTS = join(ROOT, 'bench/results.md');
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-';
const progress = (text) => process.stderr.write(`${text}\n`);

/** FNV-1a 32 of `text`, continued from `hash`. */
function fnv(text, hash = 0x811c9dc5) {
  for (let i = 0; i < text.length; i++) hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
  return hash;
}

/** A generator of 4-character blocks (xorshift32: blocks in counting order collide far later). */
function blocks(seed) {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return ALPHABET[x & 63] + ALPHABET[(x >>> 6) & 63] + ALPHABET[(x >>> 12) & 63] + ALPHABET[(x >>> 18) & 63];
  };
}

/**
 * `count` (a power of two) keys with one FNV-1a of `${scope}\n${key}`: at each stage a birthday
 * search finds two blocks that take the hash so far to one value, so any choice of one block per
 * stage ends on the same hash (Joux, 2004).
 */
export function multicollision(scope, count) {
  const next = blocks(1);
  let keys = [''];
  let state = fnv(`${scope}\n`);
  while (keys.length < count) {
    const seen = new Map();
    for (;;) {
      const block = next();
      const hash = fnv(block, state);
      const other = seen.get(hash);
      if (other !== undefined && other !== block) {
        keys = keys.flatMap((key) => [key + other, key + block]);
        state = hash;
        break;
      }
      seen.set(hash, block);
    }
  }
  return keys;
}

/** One keyed create: its status, and whether it was a replay. */
function create(origin, agent, key, i) {
  return new Promise((resolve, reject) => {
    const body = `{"name":"flood-${i}","categoryId":${i}}`;
    const headers = { authorization: `Bearer ${KEY}`, 'content-type': 'application/json', 'idempotency-key': key };
    const req = request(`${origin}/v1/pets`, { method: 'POST', agent, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode, replayed: res.headers['idempotent-replayed'] === 'true' }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Milliseconds /healthz took to answer, on a fresh connection. */
function healthz(origin) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(`${origin}/healthz`, { agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve(performance.now() - t0));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A server on a fresh directory takes a create per key, stops, and starts again on them. */
async function trial(keys) {
  const dir = tempDir();
  const args = ['--idempotency-key-limit', String(2 * keys.length)];
  const server = await start('server', { dataDir: dir, serverArgs: args });
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
  let next = 0;
  let errors = 0;
  let creating = true;
  const probes = [];
  const probing = (async () => {
    while (creating) {
      probes.push(await healthz(server.origin));
      await sleep(50);
    }
  })();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      while (next < keys.length) {
        const i = next++;
        if ((await create(server.origin, agent, keys[i], i)).status !== 201) errors++;
      }
    }),
  );
  const createMs = performance.now() - t0;
  creating = false;
  await probing;
  agent.destroy();
  await stop(server);
  const restarted = await start('server', { dataDir: dir, serverArgs: args });
  // The keys were restored, not dropped: a retry of the first create is its replay.
  const replay = await create(restarted.origin, undefined, keys[0], 0);
  if (replay.status !== 201 || !replay.replayed) errors++;
  await stop(restarted);
  removeDir(dir);
  return { createMs, healthzMaxMs: Math.max(...probes), startMs: restarted.startMs, errors };
}

/** Nanoseconds per hash of a scope and a 36-character key: FNV-1a, the table's keyed hash, and HMAC-SHA-256 (the choice it was weighed against). */
async function hashCosts(scope) {
  const { KeyedHash } = createRequire(import.meta.url)(join(ROOT, 'dist/lib/keyed-hash.js'));
  const { createHmac, randomBytes } = await import('node:crypto');
  const keyed = new KeyedHash();
  const secret = randomBytes(16);
  const texts = Array.from({ length: 4096 }, (_, i) => `${scope}\n${`k${i}-`.padEnd(36, 'x')}`);
  const hashes = {
    fnv: (text) => fnv(text),
    keyed: (text) => keyed.hash(text),
    hmac: (text) => createHmac('sha256', secret).update(text).digest().readInt32LE(0),
  };
  const costs = {};
  for (const pass of ['warm-up', 'measured']) {
    for (const [name, hash] of Object.entries(hashes)) {
      const n = name === 'hmac' ? 200_000 : 2_000_000;
      let sink = 0;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) sink ^= hash(texts[i & 4095]);
      if (pass === 'measured') costs[name] = ((performance.now() - t0) * 1e6) / n + (sink & 0); // sink read: the loop is not dropped
    }
  }
  return costs;
}

export async function floodMode() {
  const { storedScope } = createRequire(import.meta.url)(join(ROOT, 'dist/auth/scope.js'));
  const { createHash } = await import('node:crypto');
  // The scope as the server derives it from the bench's key (its identity is its SHA-256).
  const scope = await storedScope(createHash('sha256').update(KEY).digest('base64url'));
  const t0 = performance.now();
  const crafted = multicollision(scope, KEYS);
  const madeMs = performance.now() - t0;
  if (new Set(crafted.map((key) => fnv(`${scope}\n${key}`))).size !== 1)
    throw new Error('the crafted keys do not share one hash');
  const randomBlock = blocks(0x9e3779b9);
  const random = crafted.map((key) => Array.from({ length: key.length / 4 }, randomBlock).join(''));
  const sets = { random: [], crafted: [] };
  for (let round = 0; round < ROUNDS; round++) {
    for (const name of round % 2 === 0 ? ['random', 'crafted'] : ['crafted', 'random']) {
      progress(`flood: round ${round + 1}/${ROUNDS}, ${KEYS.toLocaleString('en-US')} ${name} keys`);
      sets[name].push(await trial(name === 'random' ? random : crafted));
    }
  }
  const of = (name, field) => median(sets[name].map((r) => r[field]));
  // The ratio within each round (the machine's load moves between rounds more than within one): their median, and their range.
  const ratios = (field) => sets.crafted.map((r, i) => r[field] / sets.random[i][field]).sort((a, b) => a - b);
  const ratio = (field) =>
    `${fmt.ratio(median(ratios(field)))} (${fmt.ratio(ratios(field)[0])}–${fmt.ratio(ratios(field).at(-1))})`;
  const row = (label, field, format) =>
    `| ${label} | ${format(of('random', field))} | ${format(of('crafted', field))} | ${ratio(field)} |`;
  const costs = await hashCosts(scope);
  const m = machine();
  const markdown = [
    '## Idempotency-Keys made to collide',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${KEYS.toLocaleString('en-US')} keys of ${crafted[0].length} characters sharing one FNV-1a 32 hash of scope and key (a Joux multicollision, made in ${fmt.ms(madeMs)} ms), against as many random keys of the same length; one create per key over ${CONNECTIONS} keep-alive connections on an empty store, /healthz asked every 50 ms meanwhile, then a stop and a start on the stored pets. Median of ${ROUNDS} rounds; the ratio is the median of each round's (min–max beside it).`,
    '',
    '| | Random keys | Crafted keys | Crafted ÷ random |',
    '|---|--:|--:|--:|',
    row('Creates, all keys, ms', 'createMs', fmt.ms),
    row('/healthz, slowest answer during the creates, ms', 'healthzMaxMs', fmt.ms),
    row('Start on the stored keys (spawn → first answer), ms', 'startMs', fmt.ms),
    `| Errors (a create not 201; after the start, a retry of the first not its replay) | ${of('random', 'errors')} | ${of('crafted', 'errors')} | |`,
    '',
    `One hash of the scope and a 36-character key, in this process: FNV-1a ${fmt.int(costs.fnv)} ns, the table's HalfSipHash-1-3 ${fmt.int(costs.keyed)} ns, HMAC-SHA-256 (node:crypto, truncated) ${fmt.int(costs.hmac)} ns.`,
  ].join('\n');
  writeSection(RESULTS, 'flood', markdown);
  console.log(markdown);
}
