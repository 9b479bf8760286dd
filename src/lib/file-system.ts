import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';

/** An open file the store writes through. Writes are positional so that a failed one can be cut off. */
export interface StoreFile {
  /** Writes all of `data` at `position`. */
  write(data: Uint8Array, position: number): Promise<void>;
  /** fdatasync(2): the file's data and size are durable. */
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Every file operation of the file store goes through this interface, so that tests can record the
 * order of the durable sequence and inject disk-full and I/O errors at any step.
 */
export interface FileSystem {
  /** 'wx' creates a new file and fails if it exists; 'r+' opens an existing one for writing. */
  open(path: string, flags: 'wx' | 'r+'): Promise<StoreFile>;
  readFile(path: string): Promise<Buffer>;
  readdir(path: string): Promise<string[]>;
  /** Creates the directory and its missing parents, each 0700; returns the first one it created, if any. */
  mkdir(path: string): Promise<string | undefined>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** fsync(2) on the directory itself, which makes a create, rename or unlink in it durable. */
  syncDir(path: string): Promise<void>;
}

export const nodeFileSystem: FileSystem = {
  async open(path, flags) {
    const handle = await open(path, flags, 0o600);
    return {
      async write(data, position) {
        let offset = 0;
        while (offset < data.length) {
          const { bytesWritten } = await handle.write(data, offset, data.length - offset, position + offset);
          offset += bytesWritten;
        }
      },
      datasync: () => handle.datasync(),
      truncate: (length) => handle.truncate(length),
      close: () => handle.close(),
    };
  },
  readFile: (path) => readFile(path),
  readdir: (path) => readdir(path),
  mkdir: (path) => mkdir(path, { recursive: true, mode: 0o700 }),
  rename: (from, to) => rename(from, to),
  unlink: (path) => unlink(path),
  async syncDir(path) {
    const handle = await open(path, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  },
};

/**
 * Creates `dir` and any missing parents (0700), then fsyncs the parent of each directory created, top
 * down: a power cut must not lose any name of the new path, or the whole tree with the data in it goes.
 */
export async function makeDirectory(fs: FileSystem, dir: string): Promise<void> {
  const target = resolve(dir);
  const first = await fs.mkdir(target);
  if (first === undefined) return;
  const created: string[] = [];
  for (let d = target; d !== dirname(d); d = dirname(d)) {
    created.unshift(d);
    if (d === resolve(first)) break;
  }
  for (const d of created) await fs.syncDir(dirname(d));
}
