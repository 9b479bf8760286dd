/**
 * The pet's bytes in a loop, no server: writing a pet's text, reading a million record lines the way
 * start-up does (checksums checked line by line, and vouched for by the whole file), and finding the
 * pets of a PostgreSQL page. Run after `npm run build`: `node bench/pet-codec.js [pets] [rounds] [root]`.
 * Given another checkout's `root` (built too), both builds are measured in this one process, taking
 * turns round by round (who goes first alternating), so that the machine's busy spells fall on both.
 * Prints the best round of each in CPU time (user and system, every thread: the collector's too),
 * which a busy machine disturbs less than the wall clock, in nanoseconds a pet.
 */
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { makePet } from './pets.js';

const require = createRequire(import.meta.url);
const count = Number(process.argv[2] ?? 1_000_000);
const rounds = Number(process.argv[3] ?? 7);
const roots = [resolve(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..')];
if (process.argv[4] !== undefined) roots.unshift(resolve(process.argv[4]));

function build(root) {
  const pet = require(`${root}/dist/pet/pet.js`);
  // The writer is pet/codec.ts's since issue 42, pet/pet.ts's before.
  const petJson = pet.petJson ?? require(`${root}/dist/pet/codec.js`).petJson;
  const { buildLine } = require(`${root}/dist/store/file/records/record-line.js`);
  const { scanRecords } = require(`${root}/dist/store/file/records/record-scan.js`);
  const { eachPet } = require(`${root}/dist/store/postgres/pet-texts.js`);
  return { root, petJson, buildLine, scanRecords, eachPet };
}

const builds = roots.map(build);
const pets = [];
for (let id = 1; id <= count; id++) {
  const { name, categoryId, status } = makePet(id);
  // A tenth without a status and a tenth with a name the fast reader leaves to the general one.
  const pet = { id, name: id % 10 === 3 ? `pet "${id}"` : name, categoryId: BigInt(categoryId) };
  if (id % 10 !== 7) pet.status = status;
  pets.push(pet);
}
const { petJson, buildLine } = builds[0];
const texts = pets.map(petJson);
const lines = Buffer.concat(texts.map((text) => Buffer.concat([buildLine(text, undefined), Buffer.from('\n')])));
const page = Buffer.from(texts.join('\n'));
for (const b of builds.slice(1)) {
  if (b.petJson(pets[3]) !== texts[3]) throw new Error(`${b.root} writes another text`);
}

const measures = {
  'write: petJson': (b) => {
    let bytes = 0;
    for (const pet of pets) bytes += b.petJson(pet).length;
    return bytes;
  },
  'read: record lines, each checksum checked': (b) => scan(b, true),
  'read: record lines, vouched for by the file': (b) => scan(b, false),
  'read: PostgreSQL page (eachPet)': (b) => {
    let statuses = 0;
    b.eachPet(page, (_id, status) => (statuses += status === undefined ? 0 : 1));
    return statuses;
  },
};

function scan(b, verify) {
  const state = { file: 'bench', bytes: lines, verify, lastId: 0, damage: [] };
  let statuses = 0;
  b.scanRecords(state, 0, lines.length, 1, false, (r) => (statuses += r.status === undefined ? 0 : 1));
  if (state.damage.length > 0) throw new Error(state.damage[0].reason);
  return statuses;
}

for (const [what, run] of Object.entries(measures)) {
  const best = builds.map(() => Infinity);
  const checks = builds.map(() => undefined);
  for (let r = 0; r < rounds; r++) {
    // Who goes first alternates: the one after pays for the garbage the one before left.
    const order = r % 2 === 0 ? [...builds.keys()] : [...builds.keys()].reverse();
    for (const i of order) {
      const b = builds[i];
      const start = process.cpuUsage();
      checks[i] = run(b);
      const used = process.cpuUsage(start);
      best[i] = Math.min(best[i], (used.user + used.system) * 1000);
    }
  }
  if (new Set(checks).size !== 1) throw new Error(`${what}: the builds disagree (${checks.join(', ')})`);
  const figures = best.map((ns) => `${(ns / count).toFixed(1).padStart(7)} ns`).join('  ');
  console.log(
    `${what.padEnd(44)} ${figures} a pet${builds.length > 1 ? `  (${(best[1] / best[0]).toFixed(2)}×)` : ''}`,
  );
}
