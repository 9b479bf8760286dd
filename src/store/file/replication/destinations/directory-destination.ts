import { randomBytes } from 'node:crypto';
import { open, readdir, realpath, rename, rmdir, unlink, mkdir } from 'node:fs/promises';
import { constants } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { errorCode } from '../../../../lib/system-error.js';
import { DEFAULT_REQUEST_LIMITS } from './bounded-request.js';
import { ReplicationError, reasonOf, type Destination } from './destination.js';
import { checkedKey, checkedPrefix } from './object-key.js';

/** The file calls a directory destination makes; tests pass ones that hang or refuse. */
export interface DirectoryCalls {
  mkdir(path: string): Promise<unknown>;
  writeDurably(path: string, bytes: Uint8Array): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  syncDir(path: string): Promise<void>;
  /** The file's bytes; one of more than `maxBytes` is refused without reading it. */
  readFile(path: string, maxBytes: number): Promise<Buffer>;
  /** The entries of a directory, each with whether it is one itself. */
  readdir(path: string): Promise<Array<{ name: string; directory: boolean }>>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
}

export const nodeDirectoryCalls: DirectoryCalls = {
  mkdir: (path) => mkdir(path, { recursive: true, mode: 0o700 }),
  async writeDurably(path, bytes) {
    const handle = await open(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.datasync();
    } finally {
      await handle.close();
    }
  },
  rename,
  async syncDir(path) {
    const handle = await open(path, constants.O_RDONLY | constants.O_DIRECTORY);
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
  async readFile(path, maxBytes) {
    const handle = await open(path, constants.O_RDONLY);
    try {
      const { size } = await handle.stat();
      if (size > maxBytes) {
        throw new ReplicationError('damaged', `${path} holds ${size} bytes, more than the ${maxBytes} expected`);
      }
      return await handle.readFile();
    } finally {
      await handle.close();
    }
  },
  readdir: async (path) =>
    (await readdir(path, { withFileTypes: true })).map((entry) => ({
      name: entry.name,
      directory: entry.isDirectory(),
    })),
  unlink,
  rmdir: (path) => rmdir(path),
};

/** How long one file call may take before the destination counts as hung. */
export const DEFAULT_CALL_TIMEOUT_MS = 10_000;

/**
 * A directory (a NAS, NFS or SMB share, a USB disk) as a destination. An NFS server that is gone
 * makes file calls that never return, each holding one of the four threads of libuv's pool, which
 * the store's own fdatasyncs need: so at most ONE call is outstanding here at any time. A call that
 * outlasts its timeout fails the round ('timeout'); while it still hangs, every further call fails
 * at once ('busy') without touching the pool, and the one thread it holds is all the store loses.
 */
export class DirectoryDestination implements Destination {
  readonly name: string;
  readonly #root: string;
  readonly #calls: DirectoryCalls;
  readonly #timeoutMs: number;
  #outstanding: Promise<unknown> | undefined;
  #realRoot: string | undefined;

  constructor(root: string, calls: DirectoryCalls = nodeDirectoryCalls, timeoutMs = DEFAULT_CALL_TIMEOUT_MS) {
    this.name = root;
    this.#root = root;
    this.#calls = calls;
    this.#timeoutMs = timeoutMs;
  }

  /** Written to a temp name, fdatasync'ed, renamed into place, the directory fsync'ed: a key that exists is whole. */
  async put(key: string, bytes: Uint8Array): Promise<void> {
    const path = join(this.#root, checkedKey(key));
    const temp = join(dirname(path), `.${randomBytes(6).toString('hex')}.tmp`);
    await this.#inside(key, dirname(path));
    await this.#call(() => this.#calls.mkdir(dirname(path)));
    await this.#call(() => this.#calls.writeDurably(temp, bytes));
    await this.#call(() => this.#calls.rename(temp, path));
    await this.#call(() => this.#calls.syncDir(dirname(path)));
  }

  async get(key: string, size?: number): Promise<Buffer | undefined> {
    try {
      const path = join(this.#root, checkedKey(key));
      const maxBytes = Math.max(size ?? 0, DEFAULT_REQUEST_LIMITS.maxBodyBytes);
      await this.#inside(key, path);
      return await this.#call(() => this.#calls.readFile(path, maxBytes));
    } catch (error) {
      if (reasonOf(error) === 'not_found') return undefined;
      throw error;
    }
  }

  /** Keys are paths below the root; '/'-separated whatever the platform. Temp files of a put cut short are left out. */
  async list(prefix: string): Promise<string[]> {
    checkedPrefix(prefix);
    const found: string[] = [];
    const walk = async (relative: string): Promise<void> => {
      let entries: Array<{ name: string; directory: boolean }>;
      try {
        entries = await this.#call(() => this.#calls.readdir(join(this.#root, relative)));
      } catch (error) {
        if (reasonOf(error) === 'not_found') return;
        throw error;
      }
      for (const { name, directory } of entries) {
        const key = relative === '' ? name : `${relative}/${name}`;
        if (directory) {
          if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) await walk(key);
        } else if (key.startsWith(prefix) && !name.endsWith('.tmp')) {
          found.push(checkedKey(key));
        }
      }
    };
    await walk(prefix.includes('/') ? prefix.slice(0, prefix.lastIndexOf('/')) : '');
    return found.sort();
  }

  async delete(key: string): Promise<void> {
    try {
      const path = join(this.#root, checkedKey(key));
      await this.#inside(key, dirname(path));
      await this.#call(() => this.#calls.unlink(path));
    } catch (error) {
      if (reasonOf(error) !== 'not_found') throw error;
    }
  }

  /** Removes the temp files that puts cut short left, and the directories left empty, below the root; how many went. */
  async tidy(): Promise<number> {
    let removed = 0;
    const gone = async (call: () => Promise<void>): Promise<boolean> => {
      try {
        await this.#call(call);
        return true;
      } catch (error) {
        // Something was put in it meanwhile, or it went meanwhile: either way it is not ours to remove.
        if (reasonOf(error) === 'not_found' || errorCode((error as Error).cause) === 'ENOTEMPTY') return false;
        throw error;
      }
    };
    const walk = async (relative: string): Promise<boolean> => {
      let entries: Array<{ name: string; directory: boolean }>;
      try {
        entries = await this.#call(() => this.#calls.readdir(join(this.#root, relative)));
      } catch (error) {
        if (reasonOf(error) === 'not_found') return false;
        throw error;
      }
      let left = entries.length;
      for (const { name, directory } of entries) {
        const path = join(this.#root, relative, name);
        const done = directory
          ? (await walk(join(relative, name))) && (await gone(() => this.#calls.rmdir(path)))
          : name.endsWith('.tmp') && (await gone(() => this.#calls.unlink(path)));
        if (done) {
          left--;
          removed++;
        }
      }
      return left === 0;
    };
    await walk('');
    return removed;
  }

  /**
   * Refuses a key whose `path` (its file, or the folder it goes in), or the nearest part of it that
   * exists, resolves outside the root: someone who can write to the destination can make a folder or
   * an object a symbolic link to a place beside it, which checkedKey cannot see. A link at the root
   * itself (a mount reached through one) is the operator's.
   */
  async #inside(key: string, path: string): Promise<void> {
    let at = path;
    for (;;) {
      try {
        this.#realRoot ??= await this.#call(() => realpath(this.#root));
        const real = await this.#call(() => realpath(at));
        if (real === join(this.#realRoot, relative(this.#root, at))) return;
        throw new ReplicationError('damaged', `${key} leads out of ${this.name} (a symbolic link); refused`);
      } catch (error) {
        // Nothing there yet: what mkdir makes below the part that exists is a folder, not a link.
        if (reasonOf(error) !== 'not_found') throw error;
        if (at === this.#root) return;
        at = dirname(at);
      }
    }
  }

  /** Runs one file call, never two at once; a call past the timeout fails, and so does any while it hangs. */
  #call<T>(call: () => Promise<T>): Promise<T> {
    if (this.#outstanding !== undefined) {
      return Promise.reject(
        new ReplicationError('busy', `a file call to ${this.name} has not returned yet (a hung network file system?)`),
      );
    }
    const running = call();
    this.#outstanding = running;
    const settle = (): void => {
      if (this.#outstanding === running) this.#outstanding = undefined;
    };
    running.then(settle, settle);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(new ReplicationError('timeout', `a file call to ${this.name} took longer than ${this.#timeoutMs} ms`)),
        this.#timeoutMs,
      );
    });
    return Promise.race([running, late])
      .catch((error: unknown) => {
        if (error instanceof ReplicationError) throw error;
        throw new ReplicationError(reasonOf(error), `${this.name}: ${errorCode(error) ?? String(error)}`, {
          cause: error,
        });
      })
      .finally(() => clearTimeout(timer));
  }
}
