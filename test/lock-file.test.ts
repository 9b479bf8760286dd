import assert from 'node:assert/strict';
import { existsSync, readFileSync, readlinkSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { LockFile } from '#dist/lib/lock-file.js';
import { tempDirFor } from './helpers.js';

const DEAD_PID = 2147483646;

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
