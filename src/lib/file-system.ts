import { open, readdir, readFile, rename, unlink, mkdir } from 'node:fs/promises';

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
  /** Creates the directory and its parents if missing; true when it did create it. */
  mkdir(path: string): Promise<boolean>;
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
  mkdir: async (path) => (await mkdir(path, { recursive: true })) !== undefined,
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
