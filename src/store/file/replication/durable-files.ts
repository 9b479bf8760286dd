import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { errorCode } from '../../../lib/system-error.js';
import { LOCK_FILE, SNAPSHOT_FILE, journalGeneration } from '../file-names.js';
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

/** Thrown when the data directory changed under a read (a compaction): the round is tried again. */
export class ChangedDuringRead extends Error {}

/**
 * The files of the data directory and how much of each is durable now. The snapshot's identity is
 * taken first and checked again by `stillSame` after the bytes were read: the journals it needs
 * exist until a newer snapshot replaces it, so an unchanged snapshot means a consistent set. The
 * open journal counts up to its durable length, asked after the snapshot was seen, so the snapshot
 * never names a journal left out; a journal newer than that is left for the next round.
 */
export async function durableFiles(
  dir: string,
  journal: () => DurableJournal,
): Promise<{ files: FileState[]; durable: DurableJournal }> {
  const snapshot = await stampOf(join(dir, SNAPSHOT_FILE));
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
    const s = name === SNAPSHOT_FILE ? snapshot : await stampOf(join(dir, name));
    if (s === undefined || !s.file) continue;
    files.push({ name, kind: 'replaced', length: s.size, stamp: s.stamp });
  }
  return { files, durable };
}

/** Whether the snapshot is still the one `files` saw (see durableFiles). */
export async function stillSame(dir: string, files: readonly FileState[]): Promise<boolean> {
  const before = files.find((f) => f.name === SNAPSHOT_FILE)?.stamp;
  return (await stampOf(join(dir, SNAPSHOT_FILE)))?.stamp === before;
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
