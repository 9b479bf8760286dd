/**
 * Sealed replicas (--replicate-key-file): the destination holds nothing in clear but the store's id;
 * an object forged, altered, moved to another name or sealed under another key is refused by
 * `verify --from` and `restore`, naming it; a missing or wrong key is one message; a rotated key file
 * seals new lineages with its new key and still opens the old ones.
 */
import assert from 'node:assert/strict';
import { copyFile, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli, startServer } from './support.js';
import { caughtUp, post, stopsFor } from './replication-support.js';
import { dataDir } from './store-support.js';

const NAME = 'Quokka the Unforgettable';

async function filesBelow(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name));
}

async function keyFile(root: string, name: string): Promise<string> {
  const path = join(root, name);
  const made = await runCli(['replicate-key', 'create', path]);
  assert.equal(made.code, 0, made.stderr);
  assert.match(made.stdout, /^wrote replica key [0-9a-f]{16} to /);
  assert.equal((await stat(path)).mode & 0o777, 0o600);
  return path;
}

test('sealed replicas hold no pet, name or key hash in clear, restore and verify with the key, and refuse without it or with another', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const key = await keyFile(root, 'replica.key');
  const keyed = await runCli(['keys', 'create', '--label', 'ops', '--data-dir', dir]);
  assert.equal(keyed.code, 0, keyed.stderr);
  const server = await startServer({
    dataDir: dir,
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
    replicateKeyFile: key,
  });
  servers.push(server);
  for (let i = 1; i <= 5; i++) assert.equal((await post(server.url, `${NAME} ${i}`)).status, 201);
  await caughtUp(server.running.metricsUrl as string);
  await server.stop();

  const hash = (JSON.parse(await readFile(join(dir, 'keys.json'), 'utf8')) as { keys: Array<{ sha256: string }> })
    .keys[0]?.sha256 as string;
  for (const file of await filesBelow(replica)) {
    const bytes = await readFile(file);
    assert.ok(
      !bytes.includes(NAME) && !bytes.includes('Quokka') && !bytes.includes(hash),
      `${file} holds something in clear`,
    );
    if (!file.endsWith('store.json')) assert.equal(bytes.subarray(0, 6).toString(), 'PSEAL1', file);
  }
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica, '--replicate-key-file', key]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 5 pets \(last id 5\)/);
  const verified = await runCli(['verify', '--from', replica], { PETSTORE_REPLICATE_KEY_FILE: key });
  assert.equal(verified.code, 0, verified.stdout);

  const without = await runCli(['restore', join(root, 'without'), '--from', replica]);
  assert.equal(without.code, 1);
  assert.match(
    without.stderr,
    /^restore failed: lineages\/.* is sealed: give the key file it was sealed with \(--replicate-key-file\)\n$/,
  );
  const other = await keyFile(root, 'other.key');
  const wrong = await runCli(['restore', join(root, 'wrong'), '--from', replica, '--replicate-key-file', other]);
  assert.equal(wrong.code, 1);
  assert.match(
    wrong.stderr,
    /^restore failed: lineages\/.* is sealed with key [0-9a-f]{16}, which the key file does not hold\n$/,
  );
});

test('a sealed position replayed into another round, an altered object and a forged position in clear are refused, each named', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  const key = await keyFile(root, 'replica.key');
  const server = await startServer({
    dataDir: join(root, 'data'),
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
    replicateKeyFile: key,
  });
  servers.push(server);
  for (let round = 1; round <= 3; round++) {
    assert.equal((await post(server.url, `pet ${round}`)).status, 201);
    await caughtUp(server.running.metricsUrl as string);
  }
  await server.stop();
  const [lineage] = (await readdir(join(replica, 'lineages'))) as [string];
  const positions = join(replica, 'lineages', lineage, 'positions');
  const names = (await readdir(positions)).sort();
  const newest = names.at(-1) as string;

  // The attacker writes an older, validly sealed position under the newest one's name.
  await copyFile(join(positions, names.at(-2) as string), join(positions, newest));
  const replayed = await runCli(['restore', join(root, 'replayed'), '--from', replica, '--replicate-key-file', key]);
  assert.equal(replayed.code, 1);
  assert.match(
    replayed.stderr,
    new RegExp(`${newest} does not open under its key: forged, altered or moved from another name`),
  );
  const verifyReplayed = await runCli(['verify', '--from', replica, '--replicate-key-file', key]);
  assert.equal(verifyReplayed.code, 1);
  assert.match(verifyReplayed.stdout, new RegExp(`positions/${newest} does not open under its key`));

  // A position in clear, as anyone who may write to the destination could append without the key.
  await writeFile(join(positions, newest), JSON.stringify({ format: 2, lineage, seq: names.length }));
  const forged = await runCli(['verify', '--from', replica, '--replicate-key-file', key]);
  assert.equal(forged.code, 1);
  assert.match(forged.stdout, new RegExp(`positions/${newest} is not sealed: written without a key, or forged`));

  const data = join(replica, 'lineages', lineage, 'data');
  const object = (await readdir(data)).sort()[0] as string;
  const bytes = await readFile(join(data, object));
  bytes[bytes.length - 20] = (bytes[bytes.length - 20] as number) ^ 1;
  await writeFile(join(data, object), bytes);
  const altered = await runCli(['verify', '--from', replica, '--replicate-key-file', key]);
  assert.match(altered.stdout, new RegExp(`${object} does not open under its key`));
});

test('a rotated key file seals the next lineage with its new key and still opens the old one', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  const key = await keyFile(root, 'replica.key');
  const first = await startServer({
    dataDir: dir,
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
    replicateKeyFile: key,
  });
  servers.push(first);
  assert.equal((await post(first.url, 'under the first key')).status, 201);
  await caughtUp(first.running.metricsUrl as string);
  await first.stop();
  const rotated = await runCli(['replicate-key', 'rotate', key]);
  assert.equal(rotated.code, 0, rotated.stderr);
  const newId = /added replica key ([0-9a-f]{16})/.exec(rotated.stdout)?.[1] as string;
  const second = await startServer({
    dataDir: dir,
    replicateTo: replica,
    replicateInterval: 0.05,
    metricsPort: 0,
    replicateKeyFile: key,
  });
  servers.push(second);
  assert.equal((await post(second.url, 'under the second key')).status, 201);
  await caughtUp(second.running.metricsUrl as string);
  await second.stop();
  const lineages = (await readdir(join(replica, 'lineages'))).sort();
  assert.equal(lineages.length, 2);
  const idOf = async (lineage: string): Promise<string> => {
    const position = join(replica, 'lineages', lineage, 'positions', '000000000001.json');
    return (await readFile(position)).subarray(6, 14).toString('hex');
  };
  const ids = await Promise.all(lineages.map(idOf));
  assert.equal(new Set(ids).size, 2, 'each lineage under its own key');
  assert.ok(ids.includes(newId), 'the new lineage under the new key');
  const verified = await runCli(['verify', '--from', replica, '--replicate-key-file', key]);
  assert.equal(verified.code, 0, verified.stdout);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica, '--replicate-key-file', key]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 2 pets/);
});
