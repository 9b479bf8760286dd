/**
 * The data directory's lock names its owner by pid, process start time, boot and directory, so that a
 * lock from a previous boot, a reused pid, a zombie or a copied directory is stale; a live owner of
 * this very directory is still refused.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readlink, rm, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { StoreOpenError } from '#dist/store/store.js';
import { SERVER_JS, request, spawnServerFor, stopProcess, tempDirFor, waitFor } from './support.js';
import { dataDir, defer } from './store-support.js';

const HAS_PROC = existsSync('/proc/self/stat') && existsSync('/proc/sys/kernel/random/boot_id');

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function procStat(pid: number): string[] {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return text.slice(text.lastIndexOf(')') + 2).split(' ');
}

/** Field 22 of /proc/<pid>/stat: when the process started, in clock ticks after boot. */
const startTime = (pid: number): string => procStat(pid)[19] as string;
const bootId = (): string =>
  readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim().replaceAll('-', '').slice(0, 8);

async function directoryId(dir: string): Promise<string> {
  const s = await stat(dir, { bigint: true });
  return `${s.dev.toString(16)}:${s.ino.toString(16)}`;
}

/** A lock as a server with this identity would leave it: `<pid> <start> <boot> <dev:ino>` as a symlink's target. */
async function forgeLock(
  dir: string,
  fields: { pid: number; start: string; boot: string; dir: string },
): Promise<void> {
  const path = join(dir, 'petstore.lock');
  await rm(path, { force: true });
  await symlink(`${fields.pid} ${fields.start} ${fields.boot} ${fields.dir}`, path);
}

async function assertTakenOver(t: TestContext, dir: string): Promise<void> {
  const store = await FileStore.open(dir);
  defer(t, () => store.close());
  assert.equal(store.ready, true);
  assert.match(
    await readlink(join(dir, 'petstore.lock')),
    new RegExp(`^${process.pid} `),
    'the lock now names this process',
  );
  await store.close();
}

const skipWithoutProc = HAS_PROC ? false : 'needs /proc (process start times and the boot id)';

test('a lock held by a live process of this boot for this very directory is refused, naming its pid', {
  skip: skipWithoutProc,
}, async (t) => {
  const dir = await dataDir(t);
  const owner = process.ppid;
  await forgeLock(dir, { pid: owner, start: startTime(owner), boot: bootId(), dir: await directoryId(dir) });
  await assert.rejects(FileStore.open(dir), (error: unknown) => {
    assert.ok(error instanceof StoreOpenError, String(error));
    assert.match(error.message, new RegExp(`in use by another server \\(pid ${owner}\\b`));
    return true;
  });
});

test('a lock from another boot is taken over, even though its pid now belongs to a live process', {
  skip: skipWithoutProc,
}, async (t) => {
  const dir = await dataDir(t);
  const other = bootId() === '00000000' ? '11111111' : '00000000';
  await forgeLock(dir, { pid: process.ppid, start: startTime(process.ppid), boot: other, dir: await directoryId(dir) });
  await assertTakenOver(t, dir);
});

test('a lock whose pid now belongs to a process that started at another time (pid reuse) is taken over', {
  skip: skipWithoutProc,
}, async (t) => {
  const dir = await dataDir(t);
  for (const pid of [process.ppid, 1]) {
    await forgeLock(dir, {
      pid,
      start: String(BigInt(startTime(pid)) + 1n),
      boot: bootId(),
      dir: await directoryId(dir),
    });
    await assertTakenOver(t, dir);
  }
});

test('a lock made for another directory (a copy) is taken over, even with a live owner', {
  skip: skipWithoutProc,
}, async (t) => {
  const dir = await dataDir(t);
  const elsewhere = await directoryId(await tempDirFor(t));
  await forgeLock(dir, { pid: process.ppid, start: startTime(process.ppid), boot: bootId(), dir: elsewhere });
  await assertTakenOver(t, dir);
});

test('a lock whose owner is a zombie (exited, not yet reaped) is taken over', { skip: skipWithoutProc }, async (t) => {
  // The shell's background child outlives nothing: the shell execs into sleep, which never reaps it.
  const parent = spawn('sh', ['-c', 'sleep 0.05 & echo $!; exec sleep 30'], { stdio: ['ignore', 'pipe', 'ignore'] });
  t.after(() => parent.kill('SIGKILL'));
  let out = '';
  parent.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  await waitFor(() => out.includes('\n'), 5000, 'the child pid');
  const zombie = Number.parseInt(out, 10);
  await waitFor(() => procStat(zombie)[0] === 'Z', 5000, 'the child to become a zombie');
  const dir = await dataDir(t);
  await forgeLock(dir, { pid: zombie, start: startTime(zombie), boot: bootId(), dir: await directoryId(dir) });
  await assertTakenOver(t, dir);
});

test('a lock holding only a pid (an earlier version, or no /proc) is judged by that pid being alive', async (t) => {
  const dir = await dataDir(t);
  await symlink(String(process.ppid), join(dir, 'petstore.lock'));
  await assert.rejects(FileStore.open(dir), /in use by another server/);
  await rm(join(dir, 'petstore.lock'));
  await symlink('2147483646', join(dir, 'petstore.lock'));
  await assertTakenOver(t, dir);
});

test("a copy (cp -a) of a running server's data directory starts beside it, and both serve", async (t) => {
  const base = await tempDirFor(t);
  const dir = join(base, 'data');
  const copy = join(base, 'copy');
  const key = 'copy-key-0123456789abcdef';
  const first = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: key });
  assert.equal(
    (
      await request(first.url, 'POST', '/v1/pets', {
        auth: key,
        body: '{"name":"Rex","categoryId":1}',
        headers: [['content-type', 'application/json']],
      })
    ).status,
    201,
  );
  execFileSync('cp', ['-a', dir, copy]);
  const second = await spawnServerFor(t, ['--data-dir', copy], { PETSTORE_API_KEYS: key });
  for (const server of [first, second]) {
    const list = await request(server.url, 'GET', '/v1/pets', { auth: key });
    assert.equal(list.status, 200);
    assert.deepEqual(
      (list.json as Array<{ name: string }>).map((p) => p.name),
      ['Rex'],
    );
  }
  assert.equal(await stopProcess(second), 0);
  assert.equal(await stopProcess(first), 0);
});

function canUnsharePid(): boolean {
  try {
    execFileSync('unshare', ['-p', '-f', '--mount-proc', '--kill-child', 'true'], { stdio: 'ignore' });
    return true;
  } catch {
    return false; // not root, or no unshare: the test below says so and skips
  }
}
const skipWithoutNamespaces = canUnsharePid()
  ? false
  : 'needs unshare -p (root) to run servers in PID namespaces of their own';

test("two servers in PID namespaces of their own (both pid 1, as in containers) never share a directory; a dead one's lock goes stale by its heartbeat", {
  skip: skipWithoutNamespaces,
  timeout: 120_000,
}, async (t) => {
  const dir = join(await tempDirFor(t), 'data');
  const key = 'ns-key-0123456789abcdef';
  const inNamespace = (port: number): ReturnType<typeof spawn> =>
    spawn(
      'unshare',
      [
        '-p',
        '-f',
        '--mount-proc',
        '--kill-child',
        process.execPath,
        SERVER_JS,
        '--port',
        String(port),
        '--data-dir',
        dir,
      ],
      { env: { PATH: process.env.PATH, PETSTORE_API_KEYS: key }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
  const output = (child: ReturnType<typeof spawn>): { text: () => string; exited: Promise<number | null> } => {
    let text = '';
    child.stdout?.setEncoding('utf8').on('data', (s: string) => (text += s));
    child.stderr?.setEncoding('utf8').on('data', (s: string) => (text += s));
    return { text: () => text, exited: new Promise((r) => child.on('exit', (code) => r(code))) };
  };
  const first = inNamespace(0);
  t.after(() => first.kill('SIGKILL'));
  const firstOut = output(first);
  await waitFor(() => firstOut.text().includes('"msg":"listening"'), 10_000, 'the first server listens');
  assert.match(await readlink(join(dir, 'petstore.lock')), /^1 /, 'pid 1 in its own namespace');

  const second = inNamespace(0);
  t.after(() => second.kill('SIGKILL'));
  const secondOut = output(second);
  assert.equal(await secondOut.exited, 1, secondOut.text());
  assert.match(secondOut.text(), /in use by another server \(pid 1/);

  // --kill-child: the server dies with its unshare, as with kill -9 (no stop, the lock left behind).
  first.kill('SIGKILL');
  await firstOut.exited;
  const started = Date.now();
  let third: ReturnType<typeof spawn> | undefined;
  let thirdOut: ReturnType<typeof output> | undefined;
  for (;;) {
    third = inNamespace(0);
    thirdOut = output(third);
    const listening = waitFor(() => thirdOut?.text().includes('"msg":"listening"') === true, 5000, 'listens').then(
      () => true,
      () => false,
    );
    if (await Promise.race([listening, thirdOut.exited.then(() => false)])) break;
    assert.ok(Date.now() - started < 10_000, "the dead server's lock went stale within 10 s");
    await new Promise((r) => setTimeout(r, 500));
  }
  t.after(() => third?.kill('SIGKILL'));
  third.kill('SIGKILL');
  await thirdOut.exited;
});
