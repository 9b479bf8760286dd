/**
 * Bit rot and torn sectors: every stored record carries a checksum; a damaged byte anywhere in the
 * data files is found, never served, and named (file, line, byte, pet id); `verify` lists the damage,
 * `repair` saves every intact pet into a new directory.
 */
import assert from 'node:assert/strict';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { nodeFileSystem } from '#dist/lib/file-system.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { readDirectory } from '#dist/store/file/load.js';
import { StoreOpenError } from '#dist/store/store.js';
import { petJson } from '#dist/pet/codec.js';
import type { NewPet, Pet } from '#dist/pet/pet.js';
import { TEST_KEY, request, runCli, spawnServerFor, stopProcess } from './support.js';
import { dataDir, deadLock, defer, fileBytes, recordLine, snapshotText } from './store-support.js';

const NAMES = [
  'Rex',
  'Zoë "Z" O\'Neil',
  'back\\slash',
  '猫 🐕',
  'emoji 🐈‍⬛ and ✨',
  'CJK 漢字かな',
  'tab\tand newline\n',
];
const CATEGORIES = [7n, 9_223_372_036_854_775_807n, -9_223_372_036_854_775_808n, 9_007_199_254_740_993n, 0n, -42n];
const STATUSES = [undefined, 'available', 'pending', 'sold'] as const;

function newPet(i: number): NewPet {
  const status = STATUSES[i % STATUSES.length];
  const pet: NewPet = {
    name: `${NAMES[i % NAMES.length]} ${i}`,
    categoryId: CATEGORIES[i % CATEGORIES.length] as bigint,
  };
  if (status !== undefined) pet.status = status;
  return pet;
}

interface Source {
  dir: string;
  /** Every pet's text as the API answers it. */
  texts: Map<number, string>;
  files: Map<string, Buffer>;
}

/**
 * A data directory of `snapshotPets` pets in pets.json and `journalPets` more in its journal, as a
 * server killed after them leaves it; every fifth create made with an Idempotency-Key.
 */
async function makeSource(t: TestContext, snapshotPets: number, journalPets: number): Promise<Source> {
  const root = await dataDir(t);
  const live = join(root, 'live');
  const texts = new Map<number, string>();
  const add = async (store: FileStore, i: number): Promise<void> => {
    const pet =
      i % 5 === 0
        ? (await store.createOnce(newPet(i), { scope: 'scope-a', key: `order-${i}` })).pet
        : await store.create(newPet(i));
    texts.set(pet.id, petJson(pet));
  };
  const first = await FileStore.open(live);
  for (let i = 0; i < snapshotPets; i++) await add(first, i);
  await first.close();
  const second = await FileStore.open(live);
  for (let i = snapshotPets; i < snapshotPets + journalPets; i++) await add(second, i);
  const dir = join(root, 'killed');
  await cp(live, dir, { recursive: true, verbatimSymlinks: true });
  await second.close();
  await deadLock(dir);
  await rm(join(dir, 'petstore.lock'));
  return { dir, texts, files: await fileBytes(dir) };
}

/** Writes `files` into a fresh directory `dir`. */
async function place(dir: string, files: ReadonlyMap<string, Buffer>): Promise<void> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { mode: 0o700 });
  for (const [name, bytes] of files) await writeFile(join(dir, name), bytes, { mode: 0o600 });
}

/** `files` with bit `bit` of byte `offset` of `name` flipped. */
function flipped(files: ReadonlyMap<string, Buffer>, name: string, offset: number, bit: number): Map<string, Buffer> {
  const copy = new Map([...files].map(([n, b]) => [n, Buffer.from(b)]));
  const bytes = copy.get(name) as Buffer;
  bytes[offset] = (bytes[offset] as number) ^ (1 << bit);
  return copy;
}

/** Every pet a store serves, as the API's text, by id. */
function served(store: FileStore): Map<number, string> {
  const texts = new Map<number, string>();
  for (let after = 0; ; ) {
    const page = store.list({ after, limit: 1000 });
    for (const pet of page.pets) texts.set(pet.id, petJson(pet));
    if (!page.more || page.pets.length === 0) return texts;
    after = (page.pets.at(-1) as Pet).id;
  }
}

/** Opens `dir`: the message of the refusal, or undefined when it opened and served exactly `expected`. */
async function openOrRefusal(dir: string, expected: ReadonlyMap<number, string>): Promise<string | undefined> {
  let store: FileStore;
  try {
    store = await FileStore.open(dir);
  } catch (error) {
    if (error instanceof StoreOpenError) return error.message;
    throw error;
  }
  try {
    assert.deepEqual(served(store), expected, 'a store that opens serves exactly the pets written');
    return undefined;
  } finally {
    await store.close();
  }
}

/** Each pet's line in `bytes`: its id and where the line is, its line break left out. */
function petLines(bytes: Buffer): Array<{ id: number; start: number; end: number }> {
  const lines: Array<{ id: number; start: number; end: number }> = [];
  for (let start = 0; start < bytes.length; ) {
    const lineBreak = bytes.indexOf(0x0a, start);
    const end = lineBreak === -1 ? bytes.length : lineBreak;
    const id = /^\[\{"id":(\d+),/.exec(bytes.toString('latin1', start, Math.min(end, start + 30)));
    if (id !== null) lines.push({ id: Number(id[1]), start, end });
    start = end + 1;
  }
  return lines;
}

/**
 * What `repair` would take from `dir`, against what it must: every pet whose own line was not
 * touched (`damaged` gives the byte ranges changed, by file) kept with its text, and the next id
 * above every id the store ever gave out.
 */
async function assertRepairKeepsIntact(
  dir: string,
  source: Source,
  damaged: ReadonlyMap<string, readonly [number, number]>,
  what: string,
): Promise<void> {
  const loaded = await readDirectory(nodeFileSystem, dir, await readdir(dir));
  const kept = loaded.index.list({ after: 0, limit: Number.MAX_SAFE_INTEGER }).pets.map((pet) => pet.id);
  for (const [name, bytes] of source.files) {
    if (name !== 'pets.json' && !name.endsWith('.jsonl')) continue;
    const [from, to] = damaged.get(name) ?? [-1, -1];
    for (const line of petLines(bytes)) {
      if (to > line.start && from < line.end) continue; // this pet's own bytes were damaged
      assert.equal(
        loaded.index.getText(line.id)?.toString(),
        source.texts.get(line.id),
        `${what}: intact pet ${line.id} is kept, byte for byte`,
      );
    }
  }
  assert.ok(
    loaded.lastId >= Math.max(...source.texts.keys()),
    `${what}: new ids start after ${Math.max(...source.texts.keys())}, not at ${loaded.lastId + 1}`,
  );
  assert.ok(
    kept.every((id) => source.texts.has(id)),
    `${what}: no pet that was not written`,
  );
}

/** A deterministic stream of numbers in [0, 1) (mulberry32), so that a failure can be replayed. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

test('200 single-bit flips at random bytes of pets.json and the journal: every one refused at start, none served', {
  timeout: 120_000,
}, async (t) => {
  const source = await makeSource(t, 1500, 500);
  const names = [...source.files.keys()].filter((n) => n === 'pets.json' || n.endsWith('.jsonl'));
  assert.deepEqual(names.sort(), ['pets-journal.2.jsonl', 'pets.json'], 'a snapshot and a journal');
  assert.equal(await openOrRefusal(source.dir, source.texts), undefined, 'the undamaged directory serves every pet');
  const next = random(2026_11_26);
  const trial = join(source.dir, '..', 'trial');
  let refused = 0;
  for (let i = 0; i < 200; i++) {
    const name = names[Math.floor(next() * names.length)] as string;
    const size = (source.files.get(name) as Buffer).length;
    const offset = Math.floor(next() * size);
    const bit = Math.floor(next() * 8);
    await place(trial, flipped(source.files, name, offset, bit));
    const message = await openOrRefusal(trial, source.texts);
    assert.ok(message !== undefined, `flip of bit ${bit} at byte ${offset} of ${name} (trial ${i}) was not noticed`);
    assert.match(
      message,
      new RegExp(`^damaged data: ${trial}/${name.replace('.', '\\.')} line \\d+ \\(byte \\d+`),
      `trial ${i}`,
    );
    await assertRepairKeepsIntact(
      trial,
      source,
      new Map([[name, [offset, offset + 1]]]),
      `trial ${i}, bit ${bit} at byte ${offset} of ${name}`,
    );
    refused++;
  }
  assert.equal(refused, 200);
});

test("a flip in every kind of byte of a pet's line, in pets.json and in the journal, names the file, line, byte and pet", async (t) => {
  const source = await makeSource(t, 30, 30);
  const trial = join(source.dir, '..', 'trial');
  for (const name of ['pets.json', 'pets-journal.2.jsonl']) {
    const bytes = source.files.get(name) as Buffer;
    // A line of a pet with a multi-byte name, well inside the file: line numbers count from 1.
    const cat = Buffer.from('猫');
    let lineStart = bytes.indexOf(0x0a, bytes.indexOf(0x0a) + 1) + 1;
    while (bytes.subarray(lineStart, bytes.indexOf(0x0a, lineStart)).indexOf(cat) === -1)
      lineStart = bytes.indexOf(0x0a, lineStart) + 1;
    const line = bytes.subarray(lineStart, bytes.indexOf(0x0a, lineStart));
    const lineNumber = bytes.subarray(0, lineStart).filter((b) => b === 0x0a).length + 1;
    const id = Number(/^\[\{"id":(\d+)/.exec(line.toString('latin1'))?.[1]);
    const kinds: Array<[string, number]> = [
      ['a digit of the id', line.indexOf('"id":') + 5],
      ['a letter of the name', line.indexOf('"name":"') + 8],
      ['a quote', line.indexOf('"name"')],
      ['a comma', line.indexOf(',"categoryId"')],
      ['a digit of categoryId', line.indexOf('"categoryId":') + 13],
      ['a byte of a multi-byte character', line.indexOf(cat) + 1],
      ['a digit of the checksum', line.lastIndexOf('"]') - 1],
    ];
    for (const [kind, at] of kinds) {
      for (const bit of [0, 5]) {
        await place(trial, flipped(source.files, name, lineStart + at, bit));
        const message = await openOrRefusal(trial, source.texts);
        assert.ok(message !== undefined, `${kind} in ${name}`);
        assert.ok(
          message.startsWith(`damaged data: ${trial}/${name} line ${lineNumber} (byte ${lineStart}`),
          `${kind}, bit ${bit}, in ${name}: ${message}`,
        );
        // The id is named unless its own digits are what changed.
        if (kind !== 'a digit of the id')
          assert.match(message, new RegExp(`^[^;]*, pet ${id}\\)`), `${kind}: the pet is named`);
        assert.match(
          message,
          /the "verify" command lists every damaged place, and "repair <new-dir>" writes a new data directory with every intact pet/,
        );
      }
    }
    // The line break after it: the two lines run together, both pets intact; the damage is between them.
    const lineBreak = lineStart + line.length;
    await place(trial, flipped(source.files, name, lineBreak, 0));
    const message = await openOrRefusal(trial, source.texts);
    const at = name === 'pets.json' ? lineBreak - 1 : lineBreak; // a snapshot's line ends with its comma
    assert.match(
      message ?? '',
      new RegExp(`line ${lineNumber} \\(byte ${at}, pet ${id}\\): the end of the line after pet ${id} is damaged\\. `),
    );
  }
});

test('a damaged head, end or line break of pets.json, or lines of the journal run together, take no intact pet with them and no id is given out twice', async (t) => {
  const source = await makeSource(t, 12, 6);
  const trial = join(source.dir, '..', 'trial');
  const snapshot = source.files.get('pets.json') as Buffer;
  const journal = source.files.get('pets-journal.2.jsonl') as Buffer;
  const headBreak = snapshot.indexOf(0x0a);
  const endBreak = snapshot.lastIndexOf(0x0a, snapshot.length - 2);
  const trials: Array<[string, string, Buffer, readonly [number, number]]> = [];
  // Every bit of the head's first 28 bytes (the format's name and version), and of the line breaks
  // after the head and before the end.
  for (let offset = 0; offset < 28; offset++)
    for (let bit = 0; bit < 8; bit++)
      trials.push([
        `bit ${bit} of byte ${offset}`,
        'pets.json',
        flipped(source.files, 'pets.json', offset, bit).get('pets.json') as Buffer,
        [offset, offset + 1],
      ]);
  for (const at of [headBreak, endBreak])
    for (let bit = 0; bit < 8; bit++)
      trials.push([
        `bit ${bit} of the line break at ${at}`,
        'pets.json',
        flipped(source.files, 'pets.json', at, bit).get('pets.json') as Buffer,
        [at, at + 1],
      ]);
  // The end zeroed, and the file cut short after a pet's line.
  trials.push([
    'its last 200 bytes zeroed',
    'pets.json',
    Buffer.from(snapshot).fill(0, snapshot.length - 200),
    [snapshot.length - 200, snapshot.length],
  ]);
  const cut = snapshot.lastIndexOf(0x0a, endBreak - 1) + 1;
  trials.push(["cut short after a pet's line", 'pets.json', snapshot.subarray(0, cut), [cut, snapshot.length]]);
  // Journal lines run together: a line break deleted, and one flipped.
  const lineBreak = journal.indexOf(0x0a);
  trials.push([
    'journal lines 1 and 2 run together',
    'pets-journal.2.jsonl',
    Buffer.concat([journal.subarray(0, lineBreak), journal.subarray(lineBreak + 1)]),
    [lineBreak, lineBreak],
  ]);
  trials.push([
    "the newest journal's last line zeroed",
    'pets-journal.2.jsonl',
    Buffer.from(journal).fill(0, journal.lastIndexOf(0x0a, journal.length - 2) + 1),
    [journal.lastIndexOf(0x0a, journal.length - 2) + 1, journal.length],
  ]);
  for (const [what, name, bytes, range] of trials) {
    await place(trial, new Map([...source.files, [name, bytes]]));
    // A zeroed last line of the newest journal looks as a torn append does: it is cut, its pet with it.
    const torn = what.includes('newest journal');
    const lastId = Math.max(...source.texts.keys());
    const message = await openOrRefusal(
      trial,
      torn ? new Map([...source.texts].filter(([id]) => id !== lastId)) : source.texts,
    );
    if (torn) assert.equal(message, undefined, 'cut as a torn append');
    else assert.match(message ?? '', /^damaged data: /, `${what}: refused`);
    await assertRepairKeepsIntact(trial, source, new Map([[name, range]]), what);
  }
});

test('a zeroed 4 KiB block in the middle of pets.json is found, with the pets it may have held', async (t) => {
  const source = await makeSource(t, 2000, 0);
  const snapshot = Buffer.from(source.files.get('pets.json') as Buffer);
  const start = Math.floor(snapshot.length / 2 / 4096) * 4096;
  snapshot.fill(0, start, start + 4096);
  const trial = join(source.dir, '..', 'trial');
  await place(trial, new Map([...source.files, ['pets.json', snapshot]]));
  const message = await openOrRefusal(trial, source.texts);
  assert.match(
    message ?? '',
    /^damaged data: \S+pets\.json line \d+ \(byte \d+, pet \d+\): (not a pet record|checksum mismatch) \(may have held pets \d+–\d+\)/,
  );
});

test("the newest journal's torn last line is cut by itself; a damaged line break after its last pet is not", async (t) => {
  const source = await makeSource(t, 10, 5);
  const trial = join(source.dir, '..', 'trial');
  const journal = source.files.get('pets-journal.2.jsonl') as Buffer;
  // A torn append: the first bytes of a line, and zeros where the file grew but its data did not land.
  const torn = Buffer.concat([journal, Buffer.from('[{"id":16,"name":"Half'), Buffer.alloc(9)]);
  await place(trial, new Map([...source.files, ['pets-journal.2.jsonl', torn]]));
  assert.equal(await openOrRefusal(trial, source.texts), undefined);
  // The same line complete but for its line break, then zeros: also a torn append, never acknowledged.
  const unterminated = Buffer.concat([journal.subarray(0, -1), Buffer.alloc(3)]);
  const lastId = Math.max(...source.texts.keys());
  const withoutLast = new Map([...source.texts].filter(([id]) => id !== lastId));
  await place(trial, new Map([...source.files, ['pets-journal.2.jsonl', unterminated]]));
  assert.equal(await openOrRefusal(trial, withoutLast), undefined);
  // Its line break flipped to another byte: an acknowledged pet, damaged, not a torn append.
  const flippedBreak = Buffer.from(journal);
  flippedBreak[flippedBreak.length - 1] = 0x0b;
  await place(trial, new Map([...source.files, ['pets-journal.2.jsonl', flippedBreak]]));
  assert.match(
    (await openOrRefusal(trial, source.texts)) ?? '',
    new RegExp(
      `pets-journal\\.2\\.jsonl line 5 \\(byte ${journal.lastIndexOf(0x0a, journal.length - 2) + 1}, pet ${lastId}\\): the line break after the last pet is damaged\\. `,
    ),
  );
});

test('a pet changed in memory is not written on: the compaction refuses it and the journals that hold it stay', async (t) => {
  const dir = await dataDir(t);
  const store = await FileStore.open(dir);
  const pet = await store.create({ name: 'Rex', categoryId: 7n });
  // getText hands out a view of the store's own bytes, read-only by contract: RAM going bad looks so.
  const text = store.getText(pet.id) as Buffer;
  text[text.indexOf('Rex')] = 0x42;
  await assert.rejects(
    store.close(),
    /pet 1's line in memory does not match its checksum; the snapshot was not written and the journals are kept/,
  );
  const reopened = await FileStore.open(dir);
  defer(t, () => reopened.close());
  assert.equal(reopened.getText(pet.id)?.toString(), petJson(pet), 'the journal still holds the pet as it was stored');
});

test('the server refuses to start on damaged data: exit 1, the file, line, byte and pet, and what to run', async (t) => {
  const source = await makeSource(t, 20, 0);
  const snapshot = source.files.get('pets.json') as Buffer;
  const at = snapshot.indexOf('"id":7,') + 5;
  await place(source.dir, flipped(source.files, 'pets.json', at, 1));
  const result = await runCli(['--port', '0', '--data-dir', source.dir], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    new RegExp(`^cannot start: damaged data: ${source.dir}/pets\\.json line 8 \\(byte \\d+\\): checksum mismatch`),
  );
  assert.match(result.stderr, /"verify" command lists every damaged place, and "repair <new-dir>"/);
  assert.deepEqual(
    (await readdir(source.dir)).sort(),
    ['pets-ids.json', 'pets-journal.2.jsonl', 'pets.json'],
    'nothing written, no lock left',
  );
});

test('verify counts one pet as one pet', async (t) => {
  const source = await makeSource(t, 1, 0);
  assert.deepEqual(await runCli(['verify', '--data-dir', source.dir]), {
    code: 0,
    stdout: `${source.dir}: 1 pet, every record intact\n`,
    stderr: '',
  });
});

test('verify: exit 0 with the count when intact, also while a server runs on the directory, which it does not disturb', async (t) => {
  const source = await makeSource(t, 40, 10);
  const server = await spawnServerFor(t, ['--data-dir', source.dir], { PETSTORE_API_KEYS: TEST_KEY });
  const before = await readFile(join(source.dir, 'petstore.lock')).catch(() => undefined);
  const result = await runCli(['verify', '--data-dir', source.dir]);
  assert.deepEqual(result, { code: 0, stdout: `${source.dir}: 50 pets, every record intact\n`, stderr: '' });
  assert.deepEqual(
    await readFile(join(source.dir, 'petstore.lock')).catch(() => undefined),
    before,
    "the server's lock is not touched",
  );
  assert.equal((await request(server.url, 'GET', '/v1/pets?limit=100')).status, 200);
  assert.equal(await stopProcess(server), 0);
  const usage = await runCli(['verify', 'extra', '--data-dir', source.dir]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: verify \[--data-dir <dir>\]/);
  const missing = await runCli(['verify', '--data-dir', join(source.dir, 'absent')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /there is no data directory/);
});

test('verify: exit 1 listing every damaged place, in both files', async (t) => {
  const source = await makeSource(t, 40, 10);
  const snapshot = source.files.get('pets.json') as Buffer;
  const journal = source.files.get('pets-journal.2.jsonl') as Buffer;
  let files = flipped(source.files, 'pets.json', snapshot.indexOf('"id":12,') + 10, 2);
  files = flipped(files, 'pets-journal.2.jsonl', journal.indexOf('"id":45,') + 12, 3);
  await place(source.dir, files);
  const result = await runCli(['verify', '--data-dir', source.dir]);
  assert.equal(result.code, 1, result.stderr);
  const lines = result.stdout.trimEnd().split('\n');
  assert.equal(lines[0], `${source.dir}: 48 intact pets; 2 damaged places, never served:`);
  assert.match(
    lines[1] as string,
    new RegExp(`^  ${source.dir}/pets\\.json line 13 \\(byte \\d+, pet 12\\): checksum mismatch$`),
  );
  assert.match(
    lines[2] as string,
    new RegExp(`^  ${source.dir}/pets-journal\\.2\\.jsonl line 5 \\(byte \\d+, pet 45\\): checksum mismatch$`),
  );
  assert.equal(
    lines[3],
    `"repair <new-dir> --data-dir ${source.dir}" writes a new data directory with every intact pet and sets the damaged bytes aside`,
  );
});

test('verify: a damaged last id at the end of pets.json is one of the causes it names', async (t) => {
  const source = await makeSource(t, 12, 6);
  const snapshot = source.files.get('pets.json') as Buffer;
  await place(source.dir, flipped(source.files, 'pets.json', snapshot.lastIndexOf('"lastId":') + 9, 1)); // 18 becomes 38
  const result = await runCli(['verify', '--data-dir', source.dir]);
  assert.equal(result.code, 1, result.stderr);
  assert.match(
    result.stdout,
    /the file's checksum does not match its records, though every pet's line matches its own: a line break, the pet count, the last id or the checksum itself is damaged, or a line was changed and checksummed anew, and which line cannot be known\n/,
  );
});

test('repair: a new directory with every intact pet, byte for byte, the damage set aside beside it, ids going on after the highest ever seen', async (t) => {
  const source = await makeSource(t, 40, 10);
  await writeFile(join(source.dir, 'keys.json'), '{"format":"petstore-keys/1","keys":[]}\n', { mode: 0o600 });
  const original = await fileBytes(source.dir);
  const snapshot = source.files.get('pets.json') as Buffer;
  const journal = source.files.get('pets-journal.2.jsonl') as Buffer;
  // Pet 12 in pets.json, and the last pet of all, 50, in the journal.
  let files = flipped(original, 'pets.json', snapshot.indexOf('"id":12,') + 10, 2);
  files = flipped(files, 'pets-journal.2.jsonl', journal.indexOf('"id":50,') + 12, 3);
  await place(source.dir, files);
  const damaged = await fileBytes(source.dir);
  const dest = join(source.dir, '..', 'repaired');
  const result = await runCli(['repair', dest, '--data-dir', source.dir]);
  assert.equal(result.code, 0, result.stderr);
  // The server was killed: ids up to its reservation may have been handed out.
  const reserved = Number(
    /"reserved":(\d+),"stopped":false/.exec(await readFile(join(source.dir, 'pets-ids.json'), 'utf8'))?.[1],
  );
  assert.ok(reserved >= 50);
  assert.equal(
    result.stdout,
    `repaired ${source.dir} into ${dest}: kept 48 pets and 0 API key hashes, set aside 2 damaged places in ${dest}/damaged-records.jsonl; new pets get ids from ${reserved + 1} (past the ids reserved before the store stopped uncleanly)\n`,
  );
  assert.deepEqual(await fileBytes(source.dir), damaged, 'the damaged directory is only read');

  const report = (await readFile(join(dest, 'damaged-records.jsonl'), 'utf8'))
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    report.map((r) => [r.file, r.id, r.reason]),
    [
      [`${source.dir}/pets.json`, 12, 'checksum mismatch'],
      [`${source.dir}/pets-journal.2.jsonl`, 50, 'checksum mismatch'],
    ],
  );
  const raw = Buffer.from(report[0]?.base64 as string, 'base64');
  assert.equal(
    raw.toString('latin1'),
    damaged
      .get('pets.json')
      ?.subarray(report[0]?.offset as number)
      .toString('latin1')
      .split('\n')[0],
    "the damaged line's bytes, exactly",
  );

  const server = await spawnServerFor(t, ['--data-dir', dest], { PETSTORE_API_KEYS: TEST_KEY });
  const listed = await request(server.url, 'GET', '/v1/pets?limit=100');
  const expected = [...source.texts].filter(([id]) => id !== 12 && id !== 50).map(([, text]) => text);
  assert.equal(listed.text, `[${expected.join(',')}]`, 'every intact pet served byte for byte, none altered');
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: '{"name":"next","categoryId":1}',
  });
  assert.equal(
    created.text,
    `{"id":${reserved + 1},"name":"next","categoryId":1}`,
    'id 50, damaged, is not handed out again, nor any reserved',
  );
  assert.equal(await stopProcess(server), 0);
});

test('backup refuses a directory with damaged records and says to repair it', async (t) => {
  const source = await makeSource(t, 20, 0);
  const snapshot = source.files.get('pets.json') as Buffer;
  await place(source.dir, flipped(source.files, 'pets.json', snapshot.indexOf('"id":3,') + 10, 0));
  const dest = join(source.dir, '..', 'copy');
  const result = await runCli(['backup', dest, '--data-dir', source.dir]);
  assert.equal(result.code, 1);
  assert.match(
    result.stderr,
    /^backup failed: damaged data: .*pets\.json line 4 \(byte \d+, pet 3\): checksum mismatch\. .*"repair <new-dir>"/,
  );
  await assert.rejects(readdir(dest), { code: 'ENOENT' });
});

/** `bytes` with its lines (1-based) rearranged by `edit`, which gets and returns the lines, each with its line break. */
function editLines(bytes: Buffer, edit: (lines: string[]) => string[]): Buffer {
  const lines = bytes.toString('utf8').split(/(?<=\n)/);
  return Buffer.from(edit(lines).join(''));
}

test('a journal line removed from the middle, or its first line, is found: start refused, verify exit 1 naming the file and line; duplicated and swapped lines too', async (t) => {
  const source = await makeSource(t, 10, 8);
  const name = 'pets-journal.2.jsonl';
  const journal = source.files.get(name) as Buffer;
  const trial = join(source.dir, '..', 'trial');
  const byteOfLine = (n: number): number =>
    journal
      .toString('utf8')
      .split(/(?<=\n)/)
      .slice(0, n - 1)
      .reduce((sum, l) => sum + Buffer.byteLength(l), 0);
  const cases: Array<[string, (lines: string[]) => string[], string]> = [
    [
      'line 3 removed',
      (l) => [...l.slice(0, 2), ...l.slice(3)],
      `line 3 (byte ${byteOfLine(3)}): the line of pet 13 is missing: pet 14 follows pet 12`,
    ],
    [
      'lines 3 and 4 removed',
      (l) => [...l.slice(0, 2), ...l.slice(4)],
      `line 3 (byte ${byteOfLine(3)}): the lines of pets 13–14 are missing: pet 15 follows pet 12`,
    ],
    [
      'the first line removed',
      (l) => l.slice(1),
      'line 1 (byte 0): the line of pet 11 is missing: pet 12 follows pet 10',
    ],
    [
      'line 3 twice',
      (l) => [...l.slice(0, 3), ...l.slice(2)],
      `line 4 (byte ${byteOfLine(4)}): id 13 is not above the previous id 13`,
    ],
    // Pet 13 is not missing after all: only the order is damaged.
    [
      'lines 3 and 4 swapped',
      (l) => [...l.slice(0, 2), l[3] as string, l[2] as string, ...l.slice(4)],
      `line 4 (byte ${byteOfLine(3) + byteOfLine(5) - byteOfLine(4)}): id 13 is not above the previous id 14`,
    ],
  ];
  for (const [what, edit, expected] of cases) {
    await place(trial, new Map([...source.files, [name, editLines(journal, edit)]]));
    const message = await openOrRefusal(trial, source.texts);
    assert.ok(message?.startsWith(`damaged data: ${trial}/${name} ${expected}`), `${what}: ${message}`);
    const verify = await runCli(['verify', '--data-dir', trial]);
    assert.equal(verify.code, 1, `${what}: ${verify.stdout}${verify.stderr}`);
    assert.ok(verify.stdout.includes(`\n  ${trial}/${name} ${expected}`), `${what}: ${verify.stdout}`);
  }
});

test("a journal line that ends in a comma is damage, not a pet: a snapshot's lines may, a journal's may not", async (t) => {
  const source = await makeSource(t, 10, 5);
  const name = 'pets-journal.2.jsonl';
  const journal = source.files.get(name) as Buffer;
  const trial = join(source.dir, '..', 'trial');
  // Line 2 (pet 12) with a comma before its line break.
  const withComma = editLines(journal, (lines) => lines.map((l, i) => (i === 1 ? l.replace(/\n$/, ',\n') : l)));
  await place(trial, new Map([...source.files, [name, withComma]]));
  const lineStart = journal.indexOf(0x0a) + 1;
  const lineEnd = journal.indexOf(0x0a, lineStart);
  assert.match(
    (await openOrRefusal(trial, source.texts)) ?? '',
    new RegExp(
      `^damaged data: ${trial}/pets-journal\\.2\\.jsonl line 2 \\(byte ${lineEnd}, pet 12\\): the end of the line after pet 12 is damaged\\. `,
    ),
  );
});

test("a damaged line whose id digits read as the next pet's is not named as that pet", async (t) => {
  const source = await makeSource(t, 10, 5);
  const name = 'pets-journal.2.jsonl';
  const journal = source.files.get(name) as Buffer;
  const trial = join(source.dir, '..', 'trial');
  // Pet 12's line saying id 13, its checksum left as it was: damaged, and pet 13 is the next line's.
  const lineStart = journal.indexOf(0x0a) + 1;
  await place(
    trial,
    new Map([
      ...source.files,
      [name, editLines(journal, (lines) => lines.map((l, i) => (i === 1 ? l.replace('[{"id":12,', '[{"id":13,') : l)))],
    ]),
  );
  const message = await openOrRefusal(trial, source.texts);
  assert.ok(
    message?.startsWith(`damaged data: ${trial}/${name} line 2 (byte ${lineStart}): checksum mismatch. `),
    message,
  );
});

test('repair of a directory without a reservation: new ids go past as many pets as the damaged lines at the end can hold', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  await mkdir(dir, { mode: 0o700 });
  const pets: Pet[] = Array.from({ length: 8 }, (_, i) => ({ id: i + 1, ...newPet(i) }));
  // Format 3, as an earlier version left it (no pets-ids.json): pets 1–3 in pets.json, 4–8 in the journal,
  // the last two lines zeroed but for their line breaks.
  await writeFile(join(dir, 'pets.json'), snapshotText(pets.slice(0, 3), 2, 3, 3));
  const journal = pets
    .slice(3)
    .map((p) => `${recordLine(p)}\n`)
    .join('');
  const lines = journal.split(/(?<=\n)/);
  const zeroed = lines.map((l, i) => (i >= 3 ? `${'\0'.repeat(Buffer.byteLength(l) - 1)}\n` : l)).join('');
  await writeFile(join(dir, 'pets-journal.2.jsonl'), zeroed);
  const dest = join(root, 'repaired');
  const result = await runCli(['repair', dest, '--data-dir', dir]);
  assert.equal(result.code, 0, result.stderr);
  assert.match(
    result.stdout,
    /kept 6 pets and 0 API key hashes, set aside 2 damaged places in \S+; new pets get ids from 9\n$/,
    'past 7 and 8, which the two damaged lines held',
  );
});

test('verify says the newest journal ends in a torn append, with the intact count and with damage; repair sets aside one damaged place as well as two', async (t) => {
  const source = await makeSource(t, 10, 5);
  const name = 'pets-journal.2.jsonl';
  const journal = source.files.get(name) as Buffer;
  const torn = Buffer.concat([journal, Buffer.from('[{"id":16,"name":"Ha')]);
  const said = `  the newest journal, ${name}, ends in 20 bytes after its last complete line: an append under way, or one a crash cut short, which a start cuts`;
  await place(source.dir, new Map([...source.files, [name, torn]]));
  const intact = await runCli(['verify', '--data-dir', source.dir]);
  assert.deepEqual(intact, { code: 0, stdout: `${source.dir}: 15 pets, every record intact\n${said}\n`, stderr: '' });
  const snapshot = source.files.get('pets.json') as Buffer;
  await place(
    source.dir,
    flipped(new Map([...source.files, [name, torn]]), 'pets.json', snapshot.indexOf('"id":4,') + 10, 1),
  );
  const damaged = await runCli(['verify', '--data-dir', source.dir]);
  assert.equal(damaged.code, 1);
  assert.equal(damaged.stdout.split('\n')[2], said, damaged.stdout);
  // One damaged place: its bytes are set aside all the same.
  const dest = join(source.dir, '..', 'repaired');
  assert.equal((await runCli(['repair', dest, '--data-dir', source.dir])).code, 0);
  const report = (await readFile(join(dest, 'damaged-records.jsonl'), 'utf8'))
    .trimEnd()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  assert.deepEqual(
    report.map((r) => [r.id, r.reason]),
    [[4, 'checksum mismatch']],
  );
});
