import { join } from 'node:path';
import type { FileSystem } from '../../lib/file-system.js';
import { UnsafeFileError } from '../../lib/private-file.js';
import { errorCode } from '../../lib/system-error.js';
import { parseJournal, parseSnapshot, type Snapshot } from './data-format.js';
import type { RecordSink } from './idempotency.js';
import { SNAPSHOT_FILE, isTempFile, journalFile, journalGeneration } from './file-names.js';
import { PetIndex } from './pet-index.js';
import { StoreOpenError } from '../store.js';

/** What a data directory holds, checked and in memory. */
export interface LoadedDirectory {
  index: PetIndex;
  snapshotBytes: number;
  /** The first journal generation pets.json does not cover; undefined without a pets.json of format 2. */
  snapshotJournal: number | undefined;
  /** Journal generations on disk, ascending; the last is the one to append to. */
  generations: number[];
  /** Length of the newest journal's complete lines: a torn last line lies beyond it. */
  journalLength: number;
  /** Bytes of a torn last line of the newest journal (a create cut off by a crash, never acknowledged). */
  tornBytes: number;
  /** The idempotency records met, with their pets' ids, in file order (expired ones included). */
  records: RecordSink;
}

/**
 * Reads a data directory into an index: removes temp files a crash left, then reads it (readDirectory).
 * Refuses with a StoreOpenError naming the file when the data cannot be used.
 */
export async function loadDirectory(fs: FileSystem, dir: string): Promise<LoadedDirectory> {
  const names = await listDirectory(fs, dir);
  for (const name of names.filter(isTempFile)) {
    await openStep(`cannot remove the leftover temp file ${join(dir, name)}`, () => fs.unlink(join(dir, name)));
  }
  return readDirectory(fs, dir, names);
}

export const listDirectory = (fs: FileSystem, dir: string): Promise<string[]> => openStep(`cannot list data directory ${dir}`, () => fs.readdir(dir));

/**
 * Loads the snapshot and replays the journals of `names` in order, changing nothing on disk. With a
 * snapshot of format 2 the journals it names must all be there, or the directory is refused as
 * incomplete (test/copy-while-running.test.ts tells how a copy comes to miss one).
 */
export async function readDirectory(fs: FileSystem, dir: string, names: readonly string[]): Promise<LoadedDirectory> {
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  const bytes = await readIfExists(fs, snapshotPath);
  const records: RecordSink = [];
  const snapshot = bytes === undefined ? undefined : parseSnapshot(bytes, snapshotPath, records);
  const index = snapshot?.index ?? new PetIndex();

  const generations = names.map(journalGeneration).filter((g): g is number => g !== undefined).sort((a, b) => a - b);
  // Journals before the snapshot's generation are in it already (a crash came before they were removed).
  const live = generations.filter((g) => g >= (snapshot?.journal ?? 0));
  checkComplete(dir, snapshot, live);
  let journalLength = 0;
  let tornBytes = 0;
  const snapshotLastId = index.lastId;
  for (const [i, generation] of live.entries()) {
    const path = join(dir, journalFile(generation));
    const journal = await openStep(`cannot read ${path}`, () => fs.readFile(path));
    const { completeLength } = parseJournal(journal, path, (id, status, text, start, end, where, inFile) => {
      // Format 1 does not say which journals its snapshot covers: lines at or below its last id are in it.
      if (snapshot?.journal === undefined && id <= snapshotLastId) return;
      if (id <= index.lastId) throw new StoreOpenError(`${where()}: id ${id} is not above the previous id ${index.lastId}`);
      if (inFile) index.appendInPlace(id, status, text, start, end);
      else index.appendText(id, status, text, start, end);
    }, records);
    if (completeLength < journal.length && i < live.length - 1) {
      throw new StoreOpenError(`${path} ends in an incomplete line but is not the newest journal`);
    }
    journalLength = completeLength;
    tornBytes = journal.length - completeLength;
  }
  return { index, snapshotBytes: bytes?.length ?? 0, snapshotJournal: snapshot?.journal, generations, journalLength, tornBytes, records };
}

/**
 * The journals the data needs are all there, without a gap: from the snapshot's generation (format 2),
 * from 1 without a snapshot (where the store began), consecutive after a format 1 snapshot.
 */
function checkComplete(dir: string, snapshot: Snapshot | undefined, live: readonly number[]): void {
  const first = snapshot === undefined ? 1 : snapshot.journal ?? live[0];
  if (first === undefined || (snapshot === undefined && live.length === 0)) return;
  const gap = live.findIndex((g, i) => g !== first + i);
  if (live.length > 0 && gap === -1) return;
  const missing = join(dir, journalFile(first + Math.max(gap, 0)));
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  const found = snapshot === undefined ? `there is no ${snapshotPath}` : snapshot.journal === undefined
    ? 'the journals are not consecutive' : `${snapshotPath} covers the journals before ${snapshot.journal}`;
  throw new StoreOpenError(
    `incomplete data directory: ${found}, but ${missing} is missing; the pets in it would be lost. ` +
    'A copy made while the server runs misses a journal that the server removed during the copy: ' +
    'copy it again, with the "backup" command or from a stopped server.',
  );
}

/** Runs one step of opening the store; a system error becomes a StoreOpenError that says what failed. */
export async function openStep<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw openError(what, error);
  }
}

/** A StoreOpenError saying what failed; a refused unsafe file is named by its own message. */
function openError(what: string, error: unknown): StoreOpenError {
  if (error instanceof StoreOpenError) return error;
  if (error instanceof UnsafeFileError) return new StoreOpenError(error.message, { cause: error });
  return new StoreOpenError(`${what} (${errorCode(error) ?? String(error)})`, { cause: error });
}

async function readIfExists(fs: FileSystem, path: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw openError(`cannot read ${path}`, error);
  }
}
