/**
 * Which history a restore takes (docs/operations.md, "Replication"): the newest by the order in which
 * lineages continue each other, whatever the clocks and names say; a start that fails leaves nothing
 * to choose; a restored directory does not take over its destination unless told; a fork is refused.
 */
import assert from 'node:assert/strict';
import { cp, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { test } from 'node:test';
import { DirectoryDestination } from '#dist/store/file/replication/destinations/directory-destination.js';
import { headDocument, supersedingHead } from '#dist/store/file/replication/head.js';
import { TEST_KEY, runCli, spawnServerFor, startServer, stopProcess, waitFor } from './support.js';
import { scrape } from './metrics-support.js';
import { caughtUp, metricsUrlOf, post, shiftedClock, stopsFor } from './replication-support.js';
import { dataDir } from './store-support.js';

const MINUTES_10 = 10 * 60_000;
const storeOf = async (dir: string): Promise<string> =>
  JSON.parse(await readFile(join(dir, 'replication.json'), 'utf8')).store;

async function restoredCount(root: string, replica: string, name: string, ...extra: string[]): Promise<string> {
  const restored = await runCli(['restore', join(root, name), '--from', replica, ...extra]);
  assert.equal(restored.code, 0, restored.stderr);
  return (
    /^restored ([0-9]+) pets? \(last id ([0-9]+)\)/.exec(restored.stdout)?.slice(1).join(' up to ') ?? restored.stdout
  );
}

/** Runs a server process on `dir` replicating to `replica`, creates `count` pets, waits until they are shipped, stops it. */
async function runAndCreate(
  t: import('node:test').TestContext,
  dir: string,
  replica: string,
  count: number,
  env: NodeJS.ProcessEnv = {},
): Promise<void> {
  const server = await spawnServerFor(
    t,
    ['--data-dir', dir, '--replicate-to', replica, '--replicate-interval', '0.05', '--metrics-port', '0'],
    { PETSTORE_API_KEYS: TEST_KEY, ...env },
  );
  for (let i = 1; i <= count; i++) assert.equal((await post(server.url, `pet ${i}`)).status, 201);
  await caughtUp(metricsUrlOf(server));
  assert.equal(await stopProcess(server), 0, server.stderr());
}

test('a start whose clock is 10 minutes behind still makes the newest history: every pet comes back', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  await runAndCreate(t, dir, replica, 3);
  await runAndCreate(t, dir, replica, 7, await shiftedClock(root, -MINUTES_10));
  assert.equal(await restoredCount(root, replica, 'restored'), '10 up to 10');
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 0, verified.stdout);
  assert.match(verified.stdout, /newest history: lineage \S+ \(generation 2, /);
});

test('a start that fails before it serves (port in use) leaves no lineage, even with its clock ahead; the next start continues the history', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  await runAndCreate(t, dir, replica, 5);
  const lineages = (await readdir(join(replica, 'lineages'))).sort();
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => busy.close(resolve)));
  const port = String((busy.address() as import('node:net').AddressInfo).port);
  // Ahead, its lineage's name sorts after every other: as a failed start in the same second with a higher suffix.
  const failed = await runCli(
    [
      '--data-dir',
      dir,
      '--replicate-to',
      replica,
      '--replicate-interval',
      '0.05',
      '--host',
      '127.0.0.1',
      '--port',
      port,
    ],
    { PETSTORE_API_KEYS: TEST_KEY, ...(await shiftedClock(root, MINUTES_10)) },
  );
  assert.equal(failed.code, 1, failed.stderr);
  assert.match(failed.stderr, /EADDRINUSE|in use/);
  assert.deepEqual(
    (await readdir(join(replica, 'lineages'))).sort(),
    lineages,
    'nothing of the failed start at the destination',
  );
  await runAndCreate(t, dir, replica, 20);
  assert.equal(await restoredCount(root, replica, 'restored'), '25 up to 25');
});

test('restore drill: a restored directory started against the destination it came from is refused; production goes on and restores whole', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const production = await startServer({
    dataDir: join(root, 'production'),
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
  });
  servers.push(production);
  for (let i = 1; i <= 5; i++) assert.equal((await post(production.url, `pet ${i}`)).status, 201);
  await caughtUp(production.running.metricsUrl as string);
  assert.equal(await restoredCount(root, replica, 'drill'), '5 up to 5');
  // The drill's server inherits PETSTORE_REPLICATE_TO from the environment.
  const drill = await runCli(['--data-dir', join(root, 'drill'), '--port', '0'], {
    PETSTORE_API_KEYS: TEST_KEY,
    PETSTORE_REPLICATE_TO: replica,
  });
  assert.equal(drill.code, 1, drill.stderr);
  assert.match(
    drill.stderr,
    /holds a newer history of this store than this data directory: lineage .*; this directory was restored from it/,
  );
  for (let i = 6; i <= 15; i++) assert.equal((await post(production.url, `pet ${i}`)).status, 201);
  await caughtUp(production.running.metricsUrl as string);
  await production.stop();
  assert.equal(await restoredCount(root, replica, 'new'), '15 up to 15');

  // A copy made with cp -a is refused as well: it is not the directory that wrote the history.
  await cp(join(root, 'production'), join(root, 'copy'), { recursive: true, preserveTimestamps: true });
  const copy = await runCli(['--data-dir', join(root, 'copy'), '--port', '0'], {
    PETSTORE_API_KEYS: TEST_KEY,
    PETSTORE_REPLICATE_TO: replica,
  });
  assert.equal(copy.code, 1, copy.stderr);
  assert.match(copy.stderr, /this directory is a copy of the one that replicated there/);
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 0, verified.stdout);
});

test('a take-over supersedes the running server: it stops shipping, logs one error, counts superseded rounds; restore follows the take-over', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const errors: string[] = [];
  const logger = { request() {}, info() {}, error: (message: string) => void errors.push(message) };
  const production = await startServer({
    dataDir: join(root, 'production'),
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
    logger,
  });
  servers.push(production);
  for (let i = 1; i <= 3; i++) assert.equal((await post(production.url, `pet ${i}`)).status, 201);
  await caughtUp(production.running.metricsUrl as string);
  assert.equal(await restoredCount(root, replica, 'drill'), '3 up to 3');
  const store = await storeOf(join(root, 'production'));
  const drill = await spawnServerFor(
    t,
    [
      '--data-dir',
      join(root, 'drill'),
      '--replicate-to',
      replica,
      '--replicate-interval',
      '0.05',
      '--replicate-take-over',
      store,
      '--metrics-port',
      '0',
    ],
    { PETSTORE_API_KEYS: TEST_KEY },
  );
  assert.equal((await post(drill.url, 'made in the drill')).status, 201);
  await caughtUp(metricsUrlOf(drill));
  const superseded = async (): Promise<number> =>
    (await scrape(production.running.metricsUrl as string)).families
      .get('petstore_replication_failures_total')
      ?.series.find((s) => s.labels.reason === 'superseded')?.value ?? 0;
  assert.equal((await post(production.url, 'after the take-over')).status, 201);
  await waitFor(async () => (await superseded()) >= 3, 5000, 'every round after the take-over counts as superseded');
  assert.equal(errors.filter((message) => /superseded/.test(message)).length, 1, errors.join('\n'));
  await production.stop();
  assert.equal(await stopProcess(drill), 0);
  const restored = await runCli(['restore', join(root, 'after'), '--from', replica]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(
    restored.stdout,
    /^restored 4 pets \(last id [0-9]{7}\)/,
    "the drill's history: its 3 restored pets and the one made in it",
  );
  // The old machine comes back: its directory is no longer the newest history's.
  const back = await runCli(['--data-dir', join(root, 'production'), '--replicate-to', replica, '--port', '0'], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(back.code, 1);
  assert.match(back.stderr, /another server of this store has replicated there since this directory last did/);
});

test('a directory that replicated before lineages had generations (format 1) goes on without --replicate-take-over', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  await runAndCreate(t, dir, replica, 2);
  // As 9102f8b left them: positions without generation or parent, replication.json with the store id alone.
  const [lineage] = (await readdir(join(replica, 'lineages'))) as [string];
  const positions = join(replica, 'lineages', lineage, 'positions');
  for (const name of await readdir(positions)) {
    const { generation, parent, ...rest } = JSON.parse(await readFile(join(positions, name), 'utf8'));
    assert.equal(generation, 1);
    assert.equal(parent, null);
    await writeFile(join(positions, name), JSON.stringify({ ...rest, format: 1 }));
  }
  await rm(join(replica, 'head.json'));
  await writeFile(join(dir, 'replication.json'), `${JSON.stringify({ store: await storeOf(dir) })}\n`);
  await runAndCreate(t, dir, replica, 3);
  assert.equal(await restoredCount(root, replica, 'restored'), '5 up to 5');
  const verified = await runCli(['verify', '--from', replica]);
  assert.match(verified.stdout, /newest history: lineage \S+ \(generation 1, /);
});

test('two histories that both claim to be newest (a fork): restore refuses naming both, --lineage chooses, verify says so', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  await runAndCreate(t, join(root, 'data'), replica, 4);
  const [lineage] = (await readdir(join(replica, 'lineages'))) as [string];
  // Another lineage of the same generation, continuing from nothing, as a second first start would make.
  const twin = `${lineage.slice(0, 17)}${'f'.repeat(12)}`;
  for (const part of ['data', 'positions']) {
    await mkdir(join(replica, 'lineages', twin, part), { recursive: true });
    for (const name of await readdir(join(replica, 'lineages', lineage, part))) {
      const text = (await readFile(join(replica, 'lineages', lineage, part, name), 'utf8')).replaceAll(lineage, twin);
      await writeFile(join(replica, 'lineages', twin, part, name), text);
    }
  }
  const refused = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    new RegExp(
      `2 histories that each claim to be the newest \\(a fork\\): lineage ${lineage} .*; lineage ${twin} .*; choose one with --lineage <id>`,
    ),
  );
  assert.equal(await restoredCount(root, replica, 'chosen', '--lineage', twin), '4 up to 4');
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1);
  assert.match(verified.stdout, /a fork/);
});

test('a deleted tail of the newest lineage is named by verify --from while head.json names the newest position', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  await runAndCreate(t, join(root, 'data'), replica, 3);
  const [lineage] = (await readdir(join(replica, 'lineages'))) as [string];
  const positions = join(replica, 'lineages', lineage, 'positions');
  const names = (await readdir(positions)).sort();
  assert.ok(names.length >= 2, names.join());
  await rm(join(positions, names.at(-1) as string));
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1, verified.stdout);
  assert.match(
    verified.stdout,
    new RegExp(
      `head\\.json names position ${names.length} of lineage ${lineage}, ` +
        `but its positions end at ${names.length - 1}: the newest positions were deleted`,
    ),
  );
});

test('verify --from is not intact when store.json names a store that holds no position there (restore finds nothing)', async (t) => {
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  await runAndCreate(t, join(root, 'data'), replica, 3);
  const { store } = JSON.parse(await readFile(join(replica, 'store.json'), 'utf8')) as { store: string };
  const stranger = `${store.slice(0, -1)}${store.endsWith('0') ? '1' : '0'}`;
  await writeFile(join(replica, 'store.json'), `${JSON.stringify({ store: stranger })}\n`);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.equal(restored.code, 1);
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1, verified.stdout);
  assert.match(verified.stdout, new RegExp(`store\\.json names store ${stranger}, which holds no position here`));
});

test('an older copy of the directory put back in its place (a snapshot taken while it ran) does not continue the newer history', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const server = await spawnServerFor(
    t,
    ['--data-dir', dir, '--replicate-to', replica, '--replicate-interval', '0.05', '--metrics-port', '0'],
    { PETSTORE_API_KEYS: TEST_KEY },
  );
  for (let i = 1; i <= 3; i++) assert.equal((await post(server.url, `pet ${i}`)).status, 201);
  await caughtUp(metricsUrlOf(server));
  await cp(dir, join(root, 'snapshot'), { recursive: true, preserveTimestamps: true });
  for (let i = 4; i <= 8; i++) assert.equal((await post(server.url, `pet ${i}`)).status, 201);
  await caughtUp(metricsUrlOf(server));
  assert.equal(await stopProcess(server), 0, server.stderr());
  // The directory itself stays (its inode too); its files become the snapshot's.
  for (const name of await readdir(dir)) await rm(join(dir, name), { recursive: true });
  await cp(join(root, 'snapshot'), dir, { recursive: true, preserveTimestamps: true });
  const back = await runCli(['--data-dir', dir, '--port', '0'], {
    PETSTORE_API_KEYS: TEST_KEY,
    PETSTORE_REPLICATE_TO: replica,
  });
  assert.equal(back.code, 1, back.stderr);
  // The position names the last commit seen before its files were read: 8, or 7 when pet 8 committed during the read.
  const named =
    /holds a newer history of this store than this data directory: lineage .*; its newest position holds pet (\d+), which this directory does not: it is an older copy/.exec(
      back.stderr,
    );
  assert.ok(named !== null && Number(named[1]) >= 4 && Number(named[1]) <= 8, back.stderr);
  assert.equal(await restoredCount(root, replica, 'restored'), '8 up to 8');
});

test('a server is superseded when the head names a later position of its own lineage (a twin of it, resumed from a snapshot, went on)', async (t) => {
  const root = await dataDir(t);
  const destination = new DirectoryDestination(join(root, 'replica'));
  const own = { store: 'a'.repeat(32), lineage: '20261127T000000Z-000000000000', seq: 3, generation: 2 };
  await destination.put('head.json', headDocument({ ...own, seq: 5 }));
  assert.deepEqual(await supersedingHead(destination, own), { ...own, seq: 5 });
  await destination.put('head.json', headDocument(own));
  assert.equal(await supersedingHead(destination, own), undefined);
});
