/**
 * A server killed on a full disk starts again on it: it takes its lock without needing a free block,
 * serves reads, refuses creates and is not ready until space returns, then recovers by itself.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { readdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { errorCode } from '#dist/lib/system-error.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { request, spawnServer, stopProcess, tempDir, waitFor, within, type ServerProcess } from './support.js';
import { TestFileSystem, dataDir, defer, snapshotText, idsText } from './store-support.js';

/**
 * A 256 KiB tmpfs, or undefined (the test skipped) when mounting is not permitted. After the test the
 * servers in `servers` are killed, then the tmpfs is unmounted, then its mount point removed.
 */
async function smallTmpfs(t: TestContext, servers: ServerProcess[]): Promise<string | undefined> {
  const base = await tempDir('petstore-tmpfs-');
  const mountPoint = join(base, 'mnt');
  mkdirSync(mountPoint);
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=256k,mode=0700', 'tmpfs', mountPoint], { stdio: 'pipe' });
  } catch (error) {
    await rm(base, { recursive: true, force: true });
    t.skip(`cannot mount a tmpfs here (${String((error as { stderr?: Buffer }).stderr ?? error).trim()})`);
    return undefined;
  }
  t.after(async () => {
    for (const s of servers) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    await Promise.all(servers.map((s) => s.exited));
    execFileSync('umount', [mountPoint]);
    await rm(base, { recursive: true, force: true });
  });
  return mountPoint;
}

/** Writes a file until the file system says ENOSPC. */
function fill(path: string): void {
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(4096, 1);
  try {
    for (;;) writeSync(fd, block);
  } catch (error) {
    if (errorCode(error) !== 'ENOSPC') throw error;
  } finally {
    closeSync(fd);
  }
}

const KEY = 'full-disk-key-0123456789';
const create = (server: ServerProcess, name: string): ReturnType<typeof request> =>
  request(server.url, 'POST', '/v1/pets', {
    auth: KEY,
    body: JSON.stringify({ name, categoryId: 1 }),
    headers: [['content-type', 'application/json']],
  });

test('after a kill -9 on a full disk the server starts again, serves reads, is not ready until space returns, and leaves no temp file', async (t) => {
  const servers: ServerProcess[] = [];
  const mountPoint = await smallTmpfs(t, servers);
  if (mountPoint === undefined) return;
  const dir = join(mountPoint, 'data');
  const first = await spawnServer(['--data-dir', dir], { PETSTORE_API_KEYS: KEY });
  servers.push(first);
  assert.equal((await create(first, 'Before')).status, 201);

  fill(join(mountPoint, 'filler'));
  // The journal's last page may still have room: create until a write needs a block it cannot get.
  let status = 201;
  for (let i = 0; status === 201 && i < 90; i++) status = (await create(first, `Fill ${i} `.padEnd(200, 'x'))).status;
  assert.equal(status, 503, 'creates fail once the disk is full');
  const acknowledged = ((await request(first.url, 'GET', '/v1/pets?limit=100', { auth: KEY })).json as unknown[])
    .length;
  first.child.kill('SIGKILL');
  await first.exited;

  const second = await spawnServer(['--data-dir', dir], { PETSTORE_API_KEYS: KEY });
  servers.push(second);
  const list = await request(second.url, 'GET', '/v1/pets?limit=100', { auth: KEY });
  assert.equal(list.status, 200);
  assert.equal((list.json as unknown[]).length, acknowledged, 'every acknowledged pet is served');
  assert.equal((await request(second.url, 'GET', '/readyz', { auth: false })).status, 503, 'not ready on a full disk');
  assert.equal((await create(second, 'Refused')).status, 503);
  assert.deepEqual(
    (await readdir(dir)).filter((n) => n.endsWith('.tmp')),
    [],
    'no temp file is left',
  );

  await rm(join(mountPoint, 'filler'));
  await within(
    (async () => {
      while ((await request(second.url, 'GET', '/readyz', { auth: false })).status !== 200)
        await new Promise((r) => setTimeout(r, 100));
    })(),
    5000,
    'ready again once space returns',
  );
  assert.equal((await create(second, 'After')).status, 201);
  assert.equal(await stopProcess(second), 0);
});

test('a store opened on a full disk becomes ready by itself once space returns, with no create to prompt it', async (t) => {
  const dir = await dataDir(t);
  let full = true;
  // statfs and writes as on a full disk, until `full` is cleared.
  const fs = new (class extends TestFileSystem {
    override availableBytes(path: string): Promise<number> {
      return full ? Promise.resolve(0) : super.availableBytes(path);
    }
  })();
  fs.hook = (call) => (full && call.op === 'write' ? { code: 'ENOSPC' } : undefined);
  // As a killed server leaves it: pets.json of format 2 and the journal it names (a fresh directory
  // needs its first pets.json written, which a full disk refuses).
  await writeFile(join(dir, 'pets.json'), snapshotText([], 1), { mode: 0o600 });
  await writeFile(join(dir, 'pets-journal.1.jsonl'), '', { mode: 0o600 });
  await writeFile(join(dir, 'pets-ids.json'), idsText(0), { mode: 0o600 });
  const store = await FileStore.open(dir, { fileSystem: fs });
  defer(t, () => store.close());
  assert.equal(store.ready, false, 'the probe at open failed');
  full = false;
  await waitFor(() => store.ready, 3000, 'ready again');
  assert.equal((await store.create({ name: 'After', categoryId: 1n })).id, 1);
});
