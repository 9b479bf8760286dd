import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { errorCode } from '../system-error.js';
import { StoreOpenError } from './store.js';

const LOCK_FILE = 'petstore.lock';

/**
 * One server per data directory. The lock file holds the owner's pid; a lock whose process no longer
 * exists (the owner was killed) is taken over, so a crash never leaves the directory stuck.
 */
export class DirectoryLock {
  readonly #path: string;

  private constructor(path: string) {
    this.#path = path;
  }

  static acquire(dir: string): DirectoryLock {
    const path = join(dir, LOCK_FILE);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fd = openSync(path, 'wx', 0o600);
        try {
          writeSync(fd, `${process.pid}\n`);
        } finally {
          closeSync(fd);
        }
        return new DirectoryLock(path);
      } catch (error) {
        if (errorCode(error) === 'EACCES' || errorCode(error) === 'EROFS' || errorCode(error) === 'EPERM') {
          throw new StoreOpenError(`data directory ${dir} is not writable (${errorCode(error)})`, { cause: error });
        }
        if (errorCode(error) !== 'EEXIST') throw error;
      }
      const owner = readOwner(path);
      if (owner !== undefined && isRunning(owner)) {
        throw new StoreOpenError(`data directory ${dir} is in use by another server (pid ${owner}, lock file ${path})`);
      }
      removeStale(path);
    }
    throw new StoreOpenError(`could not take the lock file ${path}`);
  }

  release(): void {
    removeStale(this.#path);
  }
}

function readOwner(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}

function isRunning(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return errorCode(error) === 'EPERM';
  }
}

function removeStale(path: string): void {
  try {
    unlinkSync(path);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
}
