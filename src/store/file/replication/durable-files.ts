import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
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
  dir: string,
  journal: () => DurableJournal,
): Promise<{ files: FileState[]; durable: DurableJournal }> {
  const durable = journal();
  const files: FileState[] = [];
  for (const name of (await readdir(dir)).sort()) {
    if (!isShippableName(name) || name === LOCK_FILE || name === REPLICA_ID_FILE) continue;
    const generation = journalGeneration(name);
    if (generation !== undefined) {
      if (generation > durable.generation) continue;
      const length = generation === durable.generation ? durable.length : (await stampOf(join(dir, name)))?.size;
      if (length === undefined) throw new ChangedDuringRead(`${name} went while it was read`);
      files.push({ name, kind: 'appended', length, stamp: '' });
      continue;
    }
    const s = await stampOf(join(dir, name));
    if (s === undefined || !s.file) continue;
    files.push({ name, kind: 'replaced', length: s.size, stamp: s.stamp });
  }
  return { files, durable };
}

/** Bytes [from, to) of a file, which must hold them all. */
export async function readRange(dir: string, name: string, from: number, to: number): Promise<Buffer> {
  const handle = await open(join(dir, name), 'r').catch((error: unknown) => {
    throw errorCode(error) === 'ENOENT' ? new ChangedDuringRead(`${name} went while it was read`) : error;
  });
  try {
    const bytes = Buffer.alloc(to - from);
    let done = 0;
    while (done < bytes.length) {
      const { bytesRead } = await handle.read(bytes, done, bytes.length - done, from + done);
      if (bytesRead === 0) throw new ChangedDuringRead(`${name} was shorter than ${to} bytes`);
      done += bytesRead;
    }
    return bytes;
  } finally {
    await handle.close();
  }
}

/** A replaced file's whole content and the identity of what was read (its own, not the name's now). */
export async function readWhole(dir: string, name: string): Promise<{ bytes: Buffer; stamp: string }> {
  const handle = await open(join(dir, name), 'r').catch((error: unknown) => {
    throw errorCode(error) === 'ENOENT' ? new ChangedDuringRead(`${name} went while it was read`) : error;
  });
  try {
    const s = await handle.stat({ bigint: true });
    const bytes = await handle.readFile();
    if (BigInt(bytes.length) !== s.size) throw new ChangedDuringRead(`${name} changed while it was read`);
    return { bytes, stamp: stampText(s) };
  } finally {
    await handle.close();
  }
}

const stampText = (s: { ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string =>
  `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;

async function stampOf(path: string): Promise<{ size: number; stamp: string; file: boolean } | undefined> {
  try {
    const s = await stat(path, { bigint: true });
    return { size: Number(s.size), stamp: stampText(s), file: s.isFile() };
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  }
}
