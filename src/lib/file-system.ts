import { type BigIntStats, constants } from 'node:fs';
import { mkdir, open, readdir, rename, stat, statfs, unlink } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { openPrivate } from './private-file.js';

/** An open file the store writes through. Writes are positional so that a failed one can be cut off. */
export interface StoreFile {
  /** Writes all of `data` at `position`. */
  write(data: Uint8Array, position: number): Promise<void>;
  /** fdatasync(2): the file's data and size are durable. */
  datasync(): Promise<void>;
  truncate(length: number): Promise<void>;
  close(): Promise<void>;
}

/** A file's size and kind, and its identity (inode, size, modification and change time): the same while unchanged. */
export interface FileStat {
  size: number;
  isFile: boolean;
  identity: string;
}

/** An open file read at positions. */
export interface ReadFile {
  /** Reads up to `length` bytes at `position` into `buffer` at `offset`: how many were read, 0 at the end. */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<number>;
  /** The open file's own stat, whatever its name names now. */
  stat(): Promise<FileStat>;
  close(): Promise<void>;
}

/**
 * Every file operation of the file store goes through this interface, so that tests can record the
 * order of the durable sequence and inject disk-full and I/O errors at any step.
 */
export interface FileSystem {
  /**
   * 'wx' creates a new file and fails if it exists; 'r+' opens an existing one for writing. Either
   * refuses a symlink at the name, and anything but a private regular file (UnsafeFileError).
   */
  open(path: string, flags: 'wx' | 'r+'): Promise<StoreFile>;
  /** Like open: a symlink or a file that others could change is refused. */
  readFile(path: string): Promise<Buffer>;
  /** Opens a file to read at positions (replication's reads); refuses as readFile does. */
  openRead(path: string): Promise<ReadFile>;
  /** stat(2) of `path`: ENOENT when nothing is there. */
  stat(path: string): Promise<FileStat>;
  readdir(path: string): Promise<string[]>;
  /** Creates the directory and its missing parents, each 0700; returns the first one it created, if any. */
  mkdir(path: string): Promise<string | undefined>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  /** fsync(2) on the directory itself, which makes a create, rename or unlink in it durable. */
  syncDir(path: string): Promise<void>;
  /** Bytes an unprivileged write may still take on the file system of `path` (statfs f_bavail). */
  availableBytes(path: string): Promise<number>;
}

const OPEN_FLAGS = {
  wx: constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL,
  'r+': constants.O_RDWR,
} as const;

export const nodeFileSystem: FileSystem = {
  async open(path, flags) {
    const handle = await openPrivate(path, OPEN_FLAGS[flags]);
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
  async readFile(path) {
    const handle = await openPrivate(path, constants.O_RDONLY);
    try {
      // One read of the whole size where handle.readFile takes 512 KiB at a time: a 65 MB snapshot
      // was some 130 round trips through the thread pool at start-up.
      const { size } = await handle.stat();
      const buffer = Buffer.allocUnsafeSlow(size);
      let filled = 0;
      while (filled < size) {
        const { bytesRead } = await handle.read(buffer, filled, size - filled, filled);
        if (bytesRead === 0) break; // the file shrank meanwhile: what was read is all there is
        filled += bytesRead;
      }
      return filled === size ? buffer : buffer.subarray(0, filled);
    } finally {
      await handle.close();
    }
  },
  async openRead(path) {
    const handle = await openPrivate(path, constants.O_RDONLY);
    return {
      read: async (buffer, offset, length, position) => (await handle.read(buffer, offset, length, position)).bytesRead,
      stat: async () => fileStat(await handle.stat({ bigint: true })),
      close: () => handle.close(),
    };
  },
  stat: async (path) => fileStat(await stat(path, { bigint: true })),
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
  async availableBytes(path) {
    const { bavail, bsize } = await statfs(path);
    return bavail * bsize;
  },
};

function fileStat(s: BigIntStats): FileStat {
  return { size: Number(s.size), isFile: s.isFile(), identity: `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}` };
}

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
