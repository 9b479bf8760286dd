import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import {
  existsSync,
  lstatSync,
  lutimesSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { LockFile } from '#dist/lib/lock-file.js';
import { tempDirFor, waitFor } from './support.js';

const DEAD_PID = 2147483646;
const LOCK_JS = resolve(__dirname, '../lib/lock-file.js');

test('a lock is exclusive within the process and free again after release', async (t) => {
  const path = join(await tempDirFor(t), 'x.lock');
  const lock = LockFile.tryAcquire(path);
  assert.ok(lock instanceof LockFile);
  assert.deepEqual(LockFile.tryAcquire(path), { owner: process.pid });
  lock.release();
  const again = LockFile.tryAcquire(path);
  assert.ok(again instanceof LockFile);
  again.release();
});

test('a lock file of an earlier version left by a dead process, or holding no valid pid at all, is taken over', async (t) => {
  const dir = await tempDirFor(t);
  for (const content of [`${DEAD_PID}\n`, '3000000000\n', 'garbage\n', '']) {
    const path = join(dir, 'x.lock');
    writeFileSync(path, content);
    const lock = LockFile.tryAcquire(path);
    assert.ok(lock instanceof LockFile, JSON.stringify(content));
    assert.match(readlinkSync(path), new RegExp(`^${process.pid} `));
    assert.ok(!existsSync(`${path}.takeover`), 'no guard is left behind');
    lock.release();
  }
});

test('while another process is taking over a dead lock, the lock is not touched; a guard left by a crash expires', async (t) => {
  const path = join(await tempDirFor(t), 'x.lock');
  writeFileSync(path, `${DEAD_PID}\n`);
  writeFileSync(`${path}.takeover`, `${DEAD_PID}\n`);
  assert.deepEqual(LockFile.tryAcquire(path), { owner: DEAD_PID });
  assert.equal(readFileSync(path, 'utf8'), `${DEAD_PID}\n`);
  const old = (Date.now() - 60_000) / 1000;
  utimesSync(`${path}.takeover`, old, old);
  // The expired guard is removed and the dead lock taken over at once: no false 'in use' at this start.
  const lock = LockFile.tryAcquire(path);
  assert.ok(lock instanceof LockFile, JSON.stringify(lock));
  assert.ok(!existsSync(`${path}.takeover`), 'the guard is gone');
  lock.release();
});

test('release leaves a lock that another process has taken over meanwhile', async (t) => {
  const path = join(await tempDirFor(t), 'x.lock');
  const lock = LockFile.tryAcquire(path);
  assert.ok(lock instanceof LockFile);
  // Another process judged it stale (say, this one was stopped for a long time) and took it.
  unlinkSync(path);
  symlinkSync('1 - - -', path);
  lock.release();
  assert.equal(readlinkSync(path), '1 - - -');
});

test('the holder refreshes its lock every second, and stops once it has released it', async (t) => {
  const path = join(await tempDirFor(t), 'x.lock');
  const lock = LockFile.tryAcquire(path);
  assert.ok(lock instanceof LockFile);
  const old = new Date(Date.now() - 60_000);
  lutimesSync(path, old, old);
  await waitFor(() => Date.now() - lstatSync(path).mtimeMs < 5000, 3000, 'the heartbeat refreshes the lock');
  lock.release();
  // Another process's lock now has the name: the released heartbeat must not keep it alive.
  symlinkSync('1 - - -', path);
  lutimesSync(path, old, old);
  await new Promise((r) => setTimeout(r, 1500));
  assert.ok(Date.now() - lstatSync(path).mtimeMs > 50_000, 'a released lock is no longer touched');
});

/** This process's PID namespace (/proc/self/ns/pid), or undefined without /proc. */
function pidNamespace(): string | undefined {
  return existsSync('/proc/self/ns/pid') ? statSync('/proc/self/ns/pid').ino.toString(16) : undefined;
}
const OWN_NS = pidNamespace();

test('a lock from another PID namespace is live while its heartbeat is fresh, and taken over once it is 5 s old', {
  skip: OWN_NS === undefined ? 'needs /proc/self/ns/pid' : false,
}, async (t) => {
  const path = join(await tempDirFor(t), 'x.lock');
  // Its pid is dead here, but in another namespace a pid says nothing: only the heartbeat does.
  const other = OWN_NS === '1' ? '2' : '1';
  symlinkSync(`${DEAD_PID} - - - ${other}`, path);
  for (const age of [0, 3000]) {
    const touched = new Date(Date.now() - age);
    lutimesSync(path, touched, touched);
    assert.deepEqual(LockFile.tryAcquire(path), { owner: DEAD_PID }, `refreshed ${age} ms ago: still held`);
  }
  const stale = new Date(Date.now() - 6000);
  lutimesSync(path, stale, stale);
  const lock = LockFile.tryAcquire(path);
  assert.ok(lock instanceof LockFile, `not refreshed for 6 s: taken over (${JSON.stringify(lock)})`);
  lock.release();
});

/**
 * A contender in a process of its own: `rounds` times it takes the lock, checks that it is alone
 * (an exclusive marker file) and that the lock still names it at the end of its turn, and releases it.
 */
const CONTENDER = `
const { LockFile } = require(${JSON.stringify(LOCK_JS)});
const fs = require('node:fs');
const [dir, rounds] = [process.argv[1], Number(process.argv[2])];
const marker = dir + '/inside';
let overlaps = 0, lost = 0;
(async () => {
  for (let i = 0; i < rounds; i++) {
    // The wait is bounded by the others' rounds; its timeout only stops a hang, however busy the machine.
    const lock = await LockFile.acquire(dir + '/x.lock', 300000);
    try { fs.writeFileSync(marker, String(process.pid), { flag: 'wx' }); } catch (e) { if (e.code !== 'EEXIST') throw e; overlaps++; }
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1);
    let target; try { target = fs.readlinkSync(dir + '/x.lock'); } catch (e) { if (e.code !== 'ENOENT') throw e; }
    if (target === undefined || !target.startsWith(process.pid + ' ')) lost++;
    try { if (fs.readFileSync(marker, 'utf8') === String(process.pid)) fs.unlinkSync(marker); } catch (e) { if (e.code !== 'ENOENT') throw e; }
    lock.release();
  }
  process.stdout.write(JSON.stringify({ overlaps, lost }));
})();
`;

function runContender(dir: string, rounds: number): Promise<{ overlaps: number; lost: number }> {
  const child = spawn(process.execPath, ['-e', CONTENDER, dir, String(rounds)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (err += s));
  return new Promise((resolvePromise, reject) =>
    child.on('close', (code) => {
      if (code === 0) resolvePromise(JSON.parse(out) as { overlaps: number; lost: number });
      else reject(new Error(`a contender exited with ${code}: ${err}`));
    }),
  );
}

// A process that found the lock gone used to remove whatever had the name by then (another process's
// fresh lock) and take it too. On two cores, 16 processes hit that window within these rounds.
test('processes taking and releasing one lock in rounds never hold it at the same time', {
  timeout: 300_000, // bounded by its rounds; this stops only a hang
}, async (t) => {
  const dir = await tempDirFor(t);
  const results = await Promise.all(Array.from({ length: 16 }, () => runContender(dir, 150)));
  const overlaps = results.reduce((sum, r) => sum + r.overlaps, 0);
  const lost = results.reduce((sum, r) => sum + r.lost, 0);
  assert.deepEqual(
    { overlaps, lost },
    { overlaps: 0, lost: 0 },
    'turns that found another holder inside, or their lock gone or replaced',
  );
});

const hasStrace = spawnSync('strace', ['-V']).status === 0 ? false : 'strace is not installed';

/** A contender that tries the lock once and says whether it got it. */
const ONCE = `
const { LockFile } = require(${JSON.stringify(LOCK_JS)});
process.stdout.write('pid ' + process.pid + '\\n');
const result = LockFile.tryAcquire(process.argv[1]);
process.stdout.write(result instanceof LockFile ? 'held\\n' : 'refused\\n');
`;

/**
 * Runs ONCE in a child that strace stops (an injected SIGSTOP) after each of its system calls on the
 * lock. At stop i this process, as the other contender, acts if bit i of `plan` is set: it releases
 * the lock if it holds it, takes it otherwise. What went wrong, if anything, is returned.
 */
async function stepped(path: string, plan: number): Promise<string[]> {
  const wrong: string[] = [];
  let mine: LockFile | undefined = LockFile.tryAcquire(path) as LockFile;
  const ours = readlinkSync(path);
  const child = spawn(
    'strace',
    [
      '-f',
      '-qq',
      '-P',
      path,
      '-e',
      'trace=symlink,symlinkat,readlink,readlinkat,unlink,unlinkat',
      '-e',
      'inject=symlink,symlinkat,readlink,readlinkat,unlink,unlinkat:signal=SIGSTOP',
      process.execPath,
      '-e',
      ONCE,
      path,
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let out = '';
  let trace = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
  child.stderr.setEncoding('utf8').on('data', (s: string) => (trace += s));
  let exited = false;
  const closed = new Promise<void>((r) => child.on('close', () => r()));
  void closed.then(() => (exited = true));
  const checkOurs = (when: string): void => {
    if (mine === undefined) return;
    let now: string | undefined;
    try {
      now = readlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    if (now !== ours) wrong.push(`${when}: the lock this process holds reads ${String(now)}`);
  };
  // strace reports each stop of the child's main thread as "[pid <pid>] --- stopped by SIGSTOP ---",
  // the pid padded to five places.
  const pid = (): number | undefined => {
    const found = /^pid (\d+)$/m.exec(out)?.[1];
    return found === undefined ? undefined : Number(found);
  };
  const stops = (): number =>
    pid() === undefined ? 0 : trace.split(new RegExp(`\\[pid +${pid()}\\] --- stopped by SIGSTOP`)).length - 1;
  try {
    for (let step = 0; ; step++) {
      await waitFor(() => exited || stops() > step, 10_000, `stop ${step} of the contender`);
      if (exited) break;
      checkOurs(`stop ${step}`);
      if ((plan >> step) & 1) {
        if (mine !== undefined) {
          mine.release();
          mine = undefined;
        } else {
          const taken = LockFile.tryAcquire(path);
          if (taken instanceof LockFile) mine = taken;
        }
      }
      process.kill(pid() as number, 'SIGCONT');
    }
  } finally {
    // A contender left stopped (the test failed half-way) would keep this test file from ending.
    if (!exited) {
      const stuck = pid();
      if (stuck !== undefined) process.kill(stuck, 'SIGKILL');
      child.kill('SIGKILL');
      await closed;
    }
  }
  checkOurs('at the end');
  if (mine !== undefined && out.includes('held')) wrong.push('both processes hold the lock');
  mine?.release();
  return wrong;
}

// The window between reading the lock as gone and removing it is a few microseconds; stepping a
// contender syscall by syscall, with another contender acting at every combination of its stops,
// opens every window deterministically (the old take-over removed a fresh lock at plans 5, 13, 21, 29).
test('whatever another process does between any two steps of a contender, the lock never has two holders', {
  skip: hasStrace,
  timeout: 300_000, // bounded by its rounds; this stops only a hang
}, async (t) => {
  const dir = await tempDirFor(t);
  const plans = Array.from({ length: 32 }, (_, plan) => plan);
  const failures: string[] = [];
  // Four at a time: each run is a node start under strace, about a third of a second.
  for (let i = 0; i < plans.length; i += 4) {
    await Promise.all(
      plans.slice(i, i + 4).map(async (plan) => {
        for (const what of await stepped(join(dir, `${plan}.lock`), plan)) failures.push(`plan ${plan}: ${what}`);
      }),
    );
  }
  assert.deepEqual(failures, []);
});
