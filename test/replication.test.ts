/**
 * Continuous replication to a directory (--replicate-to), `restore --from` and `verify --from`,
 * black-box over HTTP and the command line.
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { TEST_KEY, request, runCli, spawnServerFor, startServer, stopProcess, waitFor } from './support.js';
import { caughtUp, post, stopsFor } from './replication-support.js';
import { dataDir } from './store-support.js';

const positions = async (replica: string): Promise<string[]> => {
  const lineages = await readdir(join(replica, 'lineages'));
  return (
    await Promise.all(
      lineages.map(async (l) =>
        (await readdir(join(replica, 'lineages', l, 'positions'))).map((p) => `${l}/positions/${p}`),
      ),
    )
  )
    .flat()
    .sort();
};

test('what a server replicates restores to a new directory that serves the same pets, keeps the key hashes and Idempotency-Keys, and hands out ids past every one handed out', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const keyed = await runCli(['keys', 'create', '--label', 'ops', '--data-dir', dir]);
  assert.equal(keyed.code, 0, keyed.stderr);
  const apiKey = /pet_[A-Za-z0-9_-]+/.exec(keyed.stdout)?.[0] as string;
  const server = await startServer({ dataDir: dir, replicateTo: replica, replicateInterval: 0.05, metricsPort: 0 });
  servers.push(server);
  for (let i = 1; i <= 30; i++)
    assert.equal((await post(server.url, `pet ${i}`, i % 3 === 0 ? `key-${i}` : undefined)).status, 201);
  await caughtUp(server.running.metricsUrl as string);
  const before = await server.request('GET', '/v1/pets?limit=100');

  // The machine is lost: the server is never stopped, and only the replicas are left.
  const target = join(root, 'restored');
  const restored = await runCli(['restore', target, '--from', replica]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(
    restored.stdout,
    /^restored 30 pets \(last id 30\) as of .* from .* to .*; new pets get ids after [0-9]+\n$/,
  );
  assert.deepEqual((await readdir(target)).sort(), [
    'keys.json',
    'pets-ids.json',
    'pets-journal.1.jsonl',
    'pets.json',
    'replication.json',
  ]);
  assert.equal(await readFile(join(target, 'keys.json'), 'utf8'), await readFile(join(dir, 'keys.json'), 'utf8'));
  const store = JSON.parse(await readFile(join(dir, 'replication.json'), 'utf8')).store as string;
  assert.equal(
    JSON.parse(await readFile(join(target, 'replication.json'), 'utf8')).store,
    store,
    'the same store goes on',
  );

  // The restored store is the same store, but its history is not the newest at the destination until it is told to take it over.
  const refused = await runCli(['--data-dir', target, '--replicate-to', replica], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    new RegExp(
      `this directory was restored from it .*start with --replicate-take-over ${store}; ` +
        'for a restore drill, start without --replicate-to\n$',
    ),
  );
  const again = await spawnServerFor(
    t,
    ['--data-dir', target, '--replicate-to', replica, '--replicate-interval', '0.05', '--replicate-take-over', store],
    { PETSTORE_API_KEYS: TEST_KEY },
  );
  assert.equal((await request(again.url, 'GET', '/v1/pets?limit=100')).text, before.text);
  assert.equal(
    (await request(again.url, 'GET', '/v1/pets/1', { auth: apiKey })).status,
    200,
    'the key made with keys create works',
  );
  const retry = await post(again.url, 'pet 9', 'key-9');
  assert.equal(retry.status, 201);
  assert.equal(retry.headers['idempotent-replayed'], 'true');
  assert.equal((retry.json as { id: number }).id, 9);
  const next = await post(again.url, 'after the loss');
  assert.ok((next.json as { id: number }).id > 1_000_030, `a new id beyond the margin, got ${next.text}`);
  assert.equal(await stopProcess(again), 0);
  const lineages = await readdir(join(replica, 'lineages'));
  assert.equal(lineages.length, 2, 'a new lineage for the restored store');

  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 0, verified.stdout + verified.stderr);
  assert.match(verified.stdout, /every position and object intact\n$/);
});

test('verify --from finds an object changed at the destination and a position missing from the chain (exit 1); restore refuses a non-empty target', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const server = await startServer({
    dataDir: join(root, 'data'),
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
  });
  servers.push(server);
  // The first round ships the empty store on its own, so that each create below makes a position of its own.
  const shipped = (): Promise<string[]> =>
    positions(replica).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return [];
      throw error;
    });
  await waitFor(async () => (await shipped()).length >= 1, 10_000, 'the first position');
  for (let round = 0; round < 4; round++) {
    assert.equal((await post(server.url, `pet ${round}`)).status, 201);
    await caughtUp(server.running.metricsUrl as string);
  }
  await server.stop();
  const [lineage] = await readdir(join(replica, 'lineages'));
  const data = join(replica, 'lineages', lineage as string, 'data');
  const objects = (await readdir(data)).sort();
  const journal = objects.find((name) => name.endsWith('.jsonl')) as string;
  const bytes = await readFile(join(data, journal));
  bytes[0] = bytes[0] === 0x7b ? 0x5b : 0x7b;
  await writeFile(join(data, journal), bytes);
  const found = await positions(replica);
  assert.equal(found.length, 5, found.join());
  await writeFile(join(replica, 'lineages', found[1] as string), '{}');
  await rm(join(replica, 'lineages', found[3] as string));
  const verified = await runCli(['verify', '--from', replica]);
  assert.equal(verified.code, 1, verified.stdout + verified.stderr);
  assert.match(verified.stdout, new RegExp(`${journal} does not match its checksum`));
  assert.match(verified.stdout, /000000000002\.json: not a position of format 2/);
  assert.match(verified.stdout, /000000000005\.json: does not follow .*000000000003\.json \(the chain is broken\)/);

  const target = join(root, 'full');
  await mkdir(target);
  await writeFile(join(target, 'something'), '');
  const refused = await runCli(['restore', target, '--from', replica]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /^restore failed: .*full is not empty; a restore goes into a new or empty directory\n$/);
  const usage = await runCli(['restore', join(root, 'x')]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: restore <new-dir> --from <replica-dir | s3:\/\/bucket\/prefix>/);
});

test("a destination that cannot be used refuses the start: inside the data directory, another store's (until taken over by its id), a URL", async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const inside = await runCli(['--data-dir', dir, '--replicate-to', join(dir, 'replica')], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(inside.code, 1);
  assert.match(
    inside.stderr,
    /^cannot start: --replicate-to .*\/data\/replica is the data directory or inside it; replicas go elsewhere/,
  );
  const url = await runCli(['--data-dir', dir, '--replicate-to', 'ftp://user:secret@host/x'], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(url.code, 1);
  assert.doesNotMatch(url.stderr, /secret/);

  const replica = join(root, 'replica');
  const first = await startServer({ dataDir: join(root, 'one'), replicateTo: replica });
  await first.stop();
  const other = await runCli(['--data-dir', join(root, 'two'), '--replicate-to', replica], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(other.code, 1);
  const owner = /another store \(([0-9a-f]{32})\)/.exec(other.stderr)?.[1];
  assert.ok(owner !== undefined, other.stderr);
  assert.match(other.stderr, new RegExp(`or to make it this store's: --replicate-take-over ${owner}\\n$`));
  const taken = await startServer({ dataDir: join(root, 'two'), replicateTo: replica, replicateTakeOver: owner });
  await taken.stop();
  assert.equal(
    JSON.parse(await readFile(join(replica, 'store.json'), 'utf8')).store,
    JSON.parse(await readFile(join(root, 'two', 'replication.json'), 'utf8')).store,
  );
});

test('after repair the new directory is a store of its own: its start with the old destination is refused until told to take it over, and it then writes a lineage of its own', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const first = await startServer({ dataDir: dir, replicateTo: replica, replicateInterval: 0.05, metricsPort: 0 });
  servers.push(first);
  assert.equal((await post(first.url, 'before the repair')).status, 201);
  await caughtUp(first.running.metricsUrl as string);
  await first.stop();
  const repaired = join(root, 'repaired');
  const repair = await runCli(['repair', repaired, '--data-dir', dir]);
  assert.equal(repair.code, 0, repair.stderr);
  const refused = await runCli(['--data-dir', repaired, '--replicate-to', replica], { PETSTORE_API_KEYS: TEST_KEY });
  assert.equal(refused.code, 1);
  const owner = /another store \(([0-9a-f]{32})\)/.exec(refused.stderr)?.[1] as string;
  assert.equal(owner, JSON.parse(await readFile(join(dir, 'replication.json'), 'utf8')).store);
  const taken = await startServer({
    dataDir: repaired,
    replicateTo: replica,
    replicateInterval: 0.05,
    replicateTakeOver: owner,
    metricsPort: 0,
  });
  servers.push(taken);
  await caughtUp(taken.running.metricsUrl as string);
  await taken.stop();
  assert.equal((await readdir(join(replica, 'lineages'))).length, 2);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 1 pet \(last id 1\)/);
});

test('a stop ships what the last interval created: restored after a stop between rounds, every pet is there', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const server = await startServer({ dataDir: join(root, 'data'), replicateTo: replica, replicateInterval: 3600 });
  servers.push(server);
  // The first round, at start, ships the empty store (its lineage appears); the next would come in an hour.
  const lineages = async (): Promise<number> =>
    readdir(join(replica, 'lineages')).then(
      (names) => names.length,
      (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? 0 : Promise.reject(error)),
    );
  await waitFor(async () => (await lineages()) > 0, 5000, 'the first round at start');
  for (let i = 1; i <= 5; i++) assert.equal((await post(server.url, `pet ${i}`)).status, 201);
  await server.stop();
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 5 pets \(last id 5\)/);
});
