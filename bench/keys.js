/**
 * `node bench/run.js --keys`: what remembered Idempotency-Keys cost. For each key length (none, 36
 * characters as a UUID, 255 as the longest allowed), a store of BENCH_KEY_PETS pets (100,000) is
 * made by the built store itself, each pet created with a key of its own; then the server is started
 * on it BENCH_SPAWNS times (3) and its VmRSS read 1 s after its first answer, as after a restart.
 * Reported: the median RSS, the bytes on disk, and per keyed pet the RSS and disk bytes beyond the
 * store without keys.
 */
import { readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import {
  envNumber,
  fmt,
  machine,
  median,
  memory,
  removeDir,
  ROOT,
  sleep,
  start,
  stop,
  tempDir,
  writeSection,
} from './harness.js';

const PETS = envNumber('BENCH_KEY_PETS', 100_000, 1);
const SPAWNS = envNumber('BENCH_SPAWNS', 3, 1);
const LENGTHS = [0, 36, 255];
const RESULTS = join(ROOT, 'bench/results.md');
const progress = (text) => process.stderr.write(`${text}\n`);
const { FileStore } = createRequire(import.meta.url)(join(ROOT, 'dist/index.js'));

/** A data directory of PETS pets, each created with a key of `length` characters (none for 0). */
async function makeStore(length) {
  const dir = tempDir();
  const store = await FileStore.open(dir);
  const waiting = [];
  for (let i = 0; i < PETS; i++) {
    const pet = { name: `pet ${i}`, categoryId: BigInt(i) };
    // The scope as the server derives it from an API key: 22 characters of base64url.
    waiting.push(
      length === 0
        ? store.create(pet)
        : store.createOnce(pet, { scope: 'bench-scope-0123456789', key: `k${i}-`.padEnd(length, 'x') }),
    );
    if (waiting.length === 1000) await Promise.all(waiting.splice(0));
  }
  await Promise.all(waiting);
  await store.close();
  const bytes = readdirSync(dir)
    .filter((name) => name !== 'petstore.lock')
    .reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  return { dir, bytes };
}

export async function keysMode() {
  const rows = [];
  for (const length of LENGTHS) {
    progress(`keys: ${PETS.toLocaleString('en-US')} pets with keys of ${length} characters`);
    const { dir, bytes } = await makeStore(length);
    const rss = [];
    for (let i = 0; i < SPAWNS; i++) {
      const server = await start('server', { dataDir: dir, serverArgs: ['--idempotency-key-limit', String(PETS)] });
      await sleep(1000);
      rss.push(memory(server.child.pid).rss * 1024);
      await stop(server);
    }
    removeDir(dir);
    rows.push({ length, rss: median(rss), bytes });
  }
  const base = rows[0];
  const m = machine();
  const markdown = [
    '## Remembered Idempotency-Keys',
    '',
    `${m.date} · node ${m.node} · ${m.cpu} · Linux ${m.kernel} · data on ${m.dataFs} · load average ${m.load} at the end`,
    `${PETS.toLocaleString('en-US')} pets made by the store, each with an Idempotency-Key of its own (none in the first row); the server started on them ${SPAWNS} times, VmRSS 1 s after its first answer, median. Per keyed pet: beyond the store without keys.`,
    '',
    '| Key length | RSS, MB | On disk, MB | RSS per keyed pet, bytes | Disk per keyed pet, bytes | RSS ÷ disk, per keyed pet |',
    '|--:|--:|--:|--:|--:|--:|',
    ...rows.map((r) => {
      const rss = (r.rss - base.rss) / PETS;
      const disk = (r.bytes - base.bytes) / PETS;
      return r.length === 0
        ? `| none | ${(r.rss / 1e6).toFixed(1)} | ${(r.bytes / 1e6).toFixed(1)} | | | |`
        : `| ${r.length} | ${(r.rss / 1e6).toFixed(1)} | ${(r.bytes / 1e6).toFixed(1)} | ${fmt.int(rss)} | ${fmt.int(disk)} | ${(rss / disk).toFixed(2)}× |`;
    }),
  ].join('\n');
  writeSection(RESULTS, 'keys', markdown);
  console.log(markdown);
}
