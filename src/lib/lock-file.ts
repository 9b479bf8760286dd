import {
  closeSync,
  constants,
  lstatSync,
  lutimesSync,
  openSync,
  readFileSync,
  readlinkSync,
  symlinkSync,
  unlinkSync,
} from 'node:fs';
import { dirname } from 'node:path';
import { currentOwner, formatOwner, inOtherNamespace, isLiveOwner, parseOwner, type LockOwner } from './lock-owner.js';
import { monotonicMs } from './monotonic.js';
import { errorCode } from './system-error.js';

/**
 * An exclusive lock held as a symbolic link whose target names the owner (see LockOwner). Why a
 * symlink: it is created in one step with its content and only if the name is free (EEXIST), so a
 * reader never sees a half-made lock; and a target this short is kept in the inode itself (tmpfs,
 * ext4 under 60 bytes, xfs), so the lock is taken on a full disk, where writing a few bytes to a new
 * file fails with ENOSPC. Mercurial and Emacs lock the same way. The link is only ever read with
 * readlink, never followed. A lock whose owner no longer holds it (killed, rebooted, copied) is taken over.
 * The holder touches the link's times every HEARTBEAT_MS: an owner in another PID namespace (another
 * container on the same volume), whose pid cannot be checked from here, is live while they are fresh.
 */
export class LockFile {
  /** Lock files this process holds: a lock naming our own pid but not in here is a dead namesake's. */
  static readonly #held = new Set<string>();

  readonly #path: string;
  readonly #target: string;
  readonly #heartbeat: NodeJS.Timeout;

  private constructor(path: string, target: string) {
    this.#path = path;
    this.#target = target;
    LockFile.#held.add(path);
    this.#heartbeat = setInterval(() => touch(path), HEARTBEAT_MS);
    this.#heartbeat.unref();
  }

  /** The lock, or the pid of the live process that holds it. System errors (EACCES, EROFS…) are thrown. */
  static tryAcquire(path: string): LockFile | { owner: number } {
    const self = currentOwner(dirname(path));
    const target = formatOwner(self);
    for (let attempt = 0; attempt < 3; attempt++) {
      if (create(target, path)) return new LockFile(path, target);
      const found = readTarget(path);
      // Released since the create failed: it is simply created again. Only a lock read as stale is
      // ever removed, or a lock another process creates in the meantime would be removed with it.
      if (found === undefined) continue;
      const owner = parseOwner(found);
      // In a container the server is often pid 1 on every start: our own pid on a lock we do not hold
      // is a killed predecessor's.
      const live =
        owner !== undefined &&
        (owner.pid === process.pid && !inOtherNamespace(owner, self)
          ? LockFile.#held.has(path)
          : isLive(owner, self, path));
      if (live) return { owner: owner.pid };
      if (!takeOverStale(path, found, target)) return { owner: owner?.pid ?? 0 };
    }
    const found = readTarget(path);
    return { owner: (found === undefined ? undefined : parseOwner(found)?.pid) ?? 0 };
  }

  /** Waits up to `timeoutMs` for a lock held by another process (for short critical sections). */
  static async acquire(path: string, timeoutMs: number): Promise<LockFile> {
    const deadline = monotonicMs() + timeoutMs;
    for (;;) {
      const lock = LockFile.tryAcquire(path);
      if (lock instanceof LockFile) return lock;
      if (monotonicMs() >= deadline) throw new Error(`${path} is held by process ${lock.owner}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Removes the lock, unless another process has taken it over meanwhile (then it is theirs). */
  release(): void {
    clearInterval(this.#heartbeat);
    LockFile.#held.delete(this.#path);
    if (readTarget(this.#path) === this.#target) remove(this.#path);
  }
}

// The holder refreshes its lock this often; one not refreshed for STALE_AFTER_MS has no live holder.
const HEARTBEAT_MS = 1000;
const STALE_AFTER_MS = 5000;

/**
 * Whether another process's lock is held still. (Our own pid in our own namespace on a lock we do not
 * hold is a killed predecessor's: in a container the server is often pid 1 on every start.) In another
 * PID namespace the pid means nothing here: the heartbeat decides.
 */
function isLive(owner: LockOwner, self: LockOwner, path: string): boolean {
  if (!inOtherNamespace(owner, self)) return isLiveOwner(owner, self);
  // The wall clock, not the monotonic one: a file's mtime is a date, written by another process.
  // Both processes read the same system clock, and the holder rewrites the date every second, so a
  // step of the clock misleads this test for at most one heartbeat.
  const touched = lstatSync(path, { throwIfNoEntry: false })?.mtimeMs;
  return touched !== undefined && Date.now() - touched < STALE_AFTER_MS && !differsFrom(owner, self);
}

/** Another boot or another directory makes a lock stale, whichever namespace made it. */
function differsFrom(owner: LockOwner, self: LockOwner): boolean {
  return (
    (owner.boot !== undefined && self.boot !== undefined && owner.boot !== self.boot) ||
    (owner.dir !== undefined && self.dir !== undefined && owner.dir !== self.dir)
  );
}

function touch(path: string): void {
  const now = new Date();
  try {
    lutimesSync(path, now, now);
  } catch (error) {
    // A heartbeat that cannot be written only lets the lock look stale sooner to another namespace;
    // it must not end the server from a timer. Anything but a system error is a bug and is thrown.
    if (errorCode(error) === undefined) throw error;
  }
}

function create(target: string, path: string): boolean {
  try {
    symlinkSync(target, path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  }
}

// A takeover guard older than this was left by a process that died while taking over.
const GUARD_STALE_MS = 10_000;

/**
 * Removes a stale lock so that it can be created again. Only one process at a time may do this (an
 * exclusive guard, itself a symlink so that it needs no free block), and it removes the lock only if
 * it still reads `stale`. While the guard is held nothing else removes a stale lock, and a new lock
 * is only ever created where the name is free, so the lock removed is the one read: never one that
 * another process has meanwhile taken. (A lock found gone is not taken over but created again.)
 * Returns false when another process is taking over right now.
 */
function takeOverStale(path: string, stale: string, target: string): boolean {
  const guard = `${path}.takeover`;
  if (!create(target, guard)) {
    const age = Date.now() - (lstatSync(guard, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    // A guard that old was left by a process that died taking over: remove it and take over now.
    if (age <= GUARD_STALE_MS) return false;
    remove(guard);
    if (!create(target, guard)) return false;
  }
  try {
    if (readTarget(path) === stale) remove(path);
    return true;
  } finally {
    remove(guard);
  }
}

/** What the lock at `path` says, or undefined when there is none. */
function readTarget(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    if (errorCode(error) !== 'EINVAL') throw error;
  }
  // Not a symlink: an earlier version's lock, a regular file holding the pid. Read, never followed.
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
  try {
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
