import { join } from 'node:path';
import { LockFile } from '../../lib/lock-file.js';
import { errorCode } from '../../lib/system-error.js';
import { StoreOpenError } from '../store.js';
import { LOCK_FILE } from './file-names.js';

/** One server per data directory; a crashed owner's lock is taken over (see LockFile). */
export class DirectoryLock {
  static acquire(dir: string): LockFile {
    const path = join(dir, LOCK_FILE);
    let lock: LockFile | { owner: number };
    try {
      lock = LockFile.tryAcquire(path);
    } catch (error) {
      const code = errorCode(error);
      if (code === 'EACCES' || code === 'EROFS' || code === 'EPERM') {
        throw new StoreOpenError(`data directory ${dir} is not writable (${code})`, { cause: error });
      }
      if (code !== undefined) throw new StoreOpenError(`cannot take the lock file ${path} (${code})`, { cause: error });
      throw error;
    }
    if (lock instanceof LockFile) return lock;
    throw new StoreOpenError(
      `data directory ${dir} is in use by another server (pid ${lock.owner}, lock file ${path}); stop that server ` +
        `first, or give this one another data directory`,
    );
  }
}
