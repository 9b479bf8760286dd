import { linkSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { errorCode } from './system-error.js';

/**
 * An exclusive lock held as a file that names its owner's pid. The file appears with its content
 * already in it (written to a temp name, then hard-linked, which fails if the lock exists), so a
 * reader never sees a half-made lock. A lock whose owner no longer runs (killed) is taken over.
 */
export class LockFile {
  /** Lock files this process holds: a lock naming our own pid but not in here is a dead namesake's. */
  static readonly #held = new Set<string>();
  readonly #path: string;

  private constructor(path: string) {
    this.#path = path;
    LockFile.#held.add(path);
  }

  /** The lock, or the pid of the live process that holds it. System errors (EACCES, EROFS…) are thrown. */
  static tryAcquire(path: string): LockFile | { owner: number } {
    for (let attempt = 0; attempt < 2; attempt++) {
      if (create(path)) return new LockFile(path);
      const owner = readOwner(path);
      // In a container the server is often pid 1 on every start: our own pid on a lock we do not hold
      // is a killed predecessor's.
      const live = owner === process.pid ? LockFile.#held.has(path) : owner !== undefined && isRunning(owner);
      if (live && owner !== undefined) return { owner };
      if (!takeOverStale(path, owner)) return { owner: owner ?? 0 };
    }
    return { owner: readOwner(path) ?? 0 };
  }

  /** Waits up to `timeoutMs` for a lock held by another process (for short critical sections). */
  static async acquire(path: string, timeoutMs: number): Promise<LockFile> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const lock = LockFile.tryAcquire(path);
      if (lock instanceof LockFile) return lock;
      if (Date.now() >= deadline) throw new Error(`${path} is held by process ${lock.owner}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  release(): void {
    LockFile.#held.delete(this.#path);
    remove(this.#path);
  }
}

function create(path: string): boolean {
  const temp = `${path}.${randomBytes(6).toString('hex')}.tmp`;
  writeFileSync(temp, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
  try {
    linkSync(temp, path);
    return true;
  } catch (error) {
    if (errorCode(error) === 'EEXIST') return false;
    throw error;
  } finally {
    remove(temp);
  }
}

// A takeover guard older than this was left by a process that died while taking over.
const GUARD_STALE_MS = 10_000;

/**
 * Removes a dead owner's lock so that it can be created again. Only one process at a time may do
 * this (an exclusive guard file), and it removes the lock only if it still names the dead owner:
 * a lock that another process has meanwhile taken is never touched. Returns false when another
 * process is taking over right now.
 */
function takeOverStale(path: string, deadOwner: number | undefined): boolean {
  const guard = `${path}.takeover`;
  try {
    writeFileSync(guard, `${process.pid}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    if (errorCode(error) !== 'EEXIST') throw error;
    const age = Date.now() - (statSync(guard, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if (age > GUARD_STALE_MS) remove(guard);
    return false;
  }
  try {
    if (readOwner(path) === deadOwner) remove(path);
    return true;
  } finally {
    remove(guard);
  }
}

function readOwner(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    // Linux pids fit in 31 bits; anything else is not a pid (and process.kill would throw on it).
    return Number.isInteger(pid) && pid > 0 && pid <= 2 ** 31 - 1 ? pid : undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if (errorCode(error) === 'ESRCH') return false;
    if (errorCode(error) === 'EPERM') return true; // it exists, but belongs to another user
    throw error;
  }
}

function remove(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
