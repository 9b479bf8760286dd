import { join } from 'node:path';
import type { FileSystem, FileStat } from '../../../lib/file-system.js';
import { errorCode } from '../../../lib/system-error.js';
import { LOCK_FILE, journalGeneration } from '../file-names.js';
import { isShippableName } from './layout.js';

/** What replication asks of the store: how much of its open journal is durable, and which ids it handed out. */
export interface DurableJournal {
  generation: number;
  /** Bytes fdatasync'ed; what lies beyond may still be cut. */
  length: number;
  /** The highest id handed out, committed or not. */
  idsHandedOut: number;
}

/** Which file of a data directory, as far as replication cares. */
export interface FileState {
  name: string;
  /** Journals grow by appends: their durable length. Other files are replaced whole: their identity. */
  kind: 'appended' | 'replaced';
  length: number;
  /** For a replaced file: inode, size and change time, unchanged while the file is. */
  stamp: string;
}

/** The file of the data directory that says which store it is, to replication only; never shipped. */
export const REPLICA_ID_FILE = 'replication.json';

/**
 * Thrown when a file went or shrank under a read although the store held it (FileStore.holdFiles): something other
 * than the store changed the directory. The round is tried again.
 */
export class ChangedDuringRead extends Error {}

/**
 * The files of the data directory and how much of each is durable now, to be called while the store
 * holds its files (the snapshot and the journals it names stay as they are). The open journal counts
 * up to its durable length; a journal newer than it (rotated since) is left for the next round.
 */
export async function durableFiles(
  fs: FileSystem,
  dir: string,
  journal: () => DurableJournal,
): Promise<{ files: FileState[]; durable: DurableJournal }> {
  const durable = journal();
  const files: FileState[] = [];
  for (const name of (await fs.readdir(dir)).sort()) {
    if (!isShippableName(name) || name === LOCK_FILE || name === REPLICA_ID_FILE) continue;
    const generation = journalGeneration(name);
    if (generation !== undefined) {
      if (generation > durable.generation) continue;
      const length = generation === durable.generation ? durable.length : (await stampOf(fs, join(dir, name)))?.size;
      if (length === undefined) throw new ChangedDuringRead(`${name} went while it was read`);
      files.push({ name, kind: 'appended', length, stamp: '' });
      continue;
    }
    const s = await stampOf(fs, join(dir, name));
    if (s === undefined || !s.isFile) continue;
    files.push({ name, kind: 'replaced', length: s.size, stamp: s.identity });
  }
  return { files, durable };
}

/** Bytes [from, to) of a file, which must hold them all. */
export async function readRange(fs: FileSystem, dir: string, name: string, from: number, to: number): Promise<Buffer> {
  const file = await openHeld(fs, dir, name);
  try {
    const bytes = Buffer.alloc(to - from);
    let done = 0;
    while (done < bytes.length) {
      const read = await file.read(bytes, done, bytes.length - done, from + done);
      if (read === 0) throw new ChangedDuringRead(`${name} was shorter than ${to} bytes`);
      done += read;
    }
    return bytes;
  } finally {
    await file.close();
  }
}

/** A replaced file's whole content and the identity of what was read (its own, not the name's now). */
export async function readWhole(fs: FileSystem, dir: string, name: string): Promise<{ bytes: Buffer; stamp: string }> {
  const file = await openHeld(fs, dir, name);
  try {
    const { size, identity } = await file.stat();
    const bytes = Buffer.alloc(size);
    let done = 0;
    while (done < size) {
      const read = await file.read(bytes, done, size - done, done);
      if (read === 0) throw new ChangedDuringRead(`${name} changed while it was read`);
      done += read;
    }
    return { bytes, stamp: identity };
  } finally {
    await file.close();
  }
}

const openHeld = (fs: FileSystem, dir: string, name: string) =>
  fs.openRead(join(dir, name)).catch((error: unknown) => {
    throw errorCode(error) === 'ENOENT' ? new ChangedDuringRead(`${name} went while it was read`) : error;
  });

async function stampOf(fs: FileSystem, path: string): Promise<FileStat | undefined> {
  try {
    return await fs.stat(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}
