import { join } from 'node:path';
import type { FileSystem } from '../lib/file-system.js';
import { UnsafeFileError } from '../lib/private-file.js';
import { errorCode } from '../lib/system-error.js';
import { SNAPSHOT_FILE, isTempFile, journalFile, journalGeneration, parseJournal, parseSnapshot } from './data-format.js';
import { PetIndex } from './pet-index.js';
import { StoreOpenError } from './store.js';

/** What a data directory holds, checked and in memory. */
export interface LoadedDirectory {
  index: PetIndex;
  snapshotBytes: number;
  /** Journal generations on disk, ascending; the last is the one to append to. */
  generations: number[];
  /** Length of the newest journal's complete lines: a torn last line lies beyond it. */
  journalLength: number;
}

/**
 * Reads a data directory into an index: removes temp files a crash left, loads the snapshot, replays
 * the journals in order. Refuses with a StoreOpenError naming the file when the data cannot be used.
 */
export async function loadDirectory(fs: FileSystem, dir: string): Promise<LoadedDirectory> {
  const names = await openStep(`cannot list data directory ${dir}`, () => fs.readdir(dir));
  for (const name of names.filter(isTempFile)) {
    await openStep(`cannot remove the leftover temp file ${join(dir, name)}`, () => fs.unlink(join(dir, name)));
  }

  const index = new PetIndex();
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  const snapshot = await readIfExists(fs, snapshotPath);
  if (snapshot !== undefined) for (const pet of parseSnapshot(snapshot, snapshotPath)) index.append(pet);

  const generations = names.map(journalGeneration).filter((g): g is number => g !== undefined).sort((a, b) => a - b);
  let journalLength = 0;
  const snapshotLastId = index.lastId;
  for (const [i, generation] of generations.entries()) {
    const path = join(dir, journalFile(generation));
    const bytes = await openStep(`cannot read ${path}`, () => fs.readFile(path));
    const { pets, completeLength } = parseJournal(bytes, path);
    if (completeLength < bytes.length && i < generations.length - 1) {
      throw new StoreOpenError(`${path} ends in an incomplete line but is not the newest journal`);
    }
    for (const [line, pet] of pets.entries()) {
      // Lines at or below the snapshot's last id are in it already (a crash came before the journal
      // was removed); any other id that does not rise means the journals are not what this store wrote.
      if (pet.id <= snapshotLastId) continue;
      if (pet.id <= index.lastId) throw new StoreOpenError(`${path}, line ${line + 1}: id ${pet.id} is not above the previous id ${index.lastId}`);
      index.append(pet);
    }
    journalLength = completeLength;
  }
  return { index, snapshotBytes: snapshot?.length ?? 0, generations, journalLength };
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
