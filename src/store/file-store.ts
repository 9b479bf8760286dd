import { randomBytes } from 'node:crypto';
import { dirname, join, resolve } from 'node:path';
import type { LockFile } from '../lib/lock-file.js';
import { StoredPet, type NewPet, type Pet } from '../pet/pet.js';
import { errorCode } from '../lib/system-error.js';
import {
  SNAPSHOT_FILE,
  isTempFile,
  journalFile,
  journalGeneration,
  journalLines,
  parseJournal,
  parseSnapshot,
  snapshotChunks,
  tempSnapshotFile,
} from './data-format.js';
import { nodeFileSystem, type FileSystem, type StoreFile } from '../lib/file-system.js';
import { DirectoryLock } from './lock.js';
import { PetIndex } from './pet-index.js';
import { StoreOpenError, StoreUnavailableError, type ListPage, type ListQuery, type PetStore } from './store.js';

export interface FileStoreOptions {
  /** The file operations to use; tests pass one that records calls or injects faults. */
  fileSystem?: FileSystem;
  /**
   * Journal bytes past which a new snapshot is written in the background. The bound in force is the
   * larger of this and the last snapshot's size, so that rewriting the snapshot costs O(1) per create.
   */
  compactAfterBytes?: number;
  /** Told about a failure that no request is waiting on (a background compaction); default: a process warning on stderr. */
  onBackgroundError?: (error: unknown) => void;
}

interface PendingCreate {
  pet: NewPet;
  resolve: (pet: Pet) => void;
  reject: (error: Error) => void;
}

const DEFAULT_COMPACT_AFTER = 4 * 1024 * 1024;

/**
 * Pets kept in a JSON snapshot plus JSON-lines journals in one directory.
 *
 * A create is acknowledged only after its line is appended to the journal and fdatasync'ed; creates
 * that arrive while a commit is under way wait and are committed together (group commit), so a
 * create costs one append, never a rewrite. When the journal outgrows its bound, the journal is
 * rotated and a new snapshot is written beside it in the background; replay skips journal lines
 * whose id the snapshot already holds, so a crash at any step recovers exactly the acknowledged pets.
 */
export class FileStore implements PetStore {
  readonly #dir: string;
  readonly #fs: FileSystem;
  readonly #lock: LockFile;
  readonly #index: PetIndex;
  readonly #compactAfter: number;
  readonly #onBackgroundError: (error: unknown) => void;
  #journal: StoreFile;
  #generation: number;
  /** Journal generations older than the current one, to delete once a snapshot covers them. */
  #oldGenerations: number[];
  /** Durable length of the current journal: everything before it is acknowledged. */
  #journalLength: number;
  #snapshotBytes: number;
  /** Journal length past which the next compaction starts. */
  #compactAt: number;
  #nextId: number;
  #queue: PendingCreate[] = [];
  #committing: Promise<void> | undefined;
  #compacting: Promise<void> | undefined;
  /** Set when a write or fsync failed; cleared once the journal is cut back to its durable length. */
  #failure: Error | undefined;
  #closed = false;

  private constructor(init: {
    dir: string; fs: FileSystem; lock: LockFile; index: PetIndex; journal: StoreFile; generation: number;
    oldGenerations: number[]; journalLength: number; snapshotBytes: number; options: FileStoreOptions;
  }) {
    this.#dir = init.dir;
    this.#fs = init.fs;
    this.#lock = init.lock;
    this.#index = init.index;
    this.#journal = init.journal;
    this.#generation = init.generation;
    this.#oldGenerations = init.oldGenerations;
    this.#journalLength = init.journalLength;
    this.#snapshotBytes = init.snapshotBytes;
    this.#nextId = init.index.lastId + 1;
    this.#compactAfter = init.options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER;
    this.#compactAt = this.#compactBound();
    this.#onBackgroundError = init.options.onBackgroundError ?? reportToStderr;
  }

  /**
   * Opens (creating if needed) the store in `dir`: takes the directory lock, removes temp files a
   * crash left, loads the snapshot, replays the journals and cuts a torn final line.
   * Refuses with a StoreOpenError naming the file when the data cannot be used.
   */
  static async open(dir: string, options: FileStoreOptions = {}): Promise<FileStore> {
    const fs = options.fileSystem ?? nodeFileSystem;
    await openStep(`cannot create data directory ${dir}`, async () => {
      // A new directory's own name must survive a crash too.
      if (await fs.mkdir(dir)) await fs.syncDir(dirname(resolve(dir)));
    });
    const lock = DirectoryLock.acquire(dir);
    try {
      return await FileStore.#load(dir, fs, lock, options);
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  static async #load(dir: string, fs: FileSystem, lock: LockFile, options: FileStoreOptions): Promise<FileStore> {
    const names = await openStep(`cannot list data directory ${dir}`, () => fs.readdir(dir));
    for (const name of names.filter(isTempFile)) {
      await openStep(`cannot remove the leftover temp file ${join(dir, name)}`, () => fs.unlink(join(dir, name)));
    }

    const index = new PetIndex();
    const snapshotPath = join(dir, SNAPSHOT_FILE);
    let snapshotBytes = 0;
    const snapshot = await readIfExists(fs, snapshotPath);
    if (snapshot !== undefined) {
      snapshotBytes = snapshot.length;
      for (const pet of parseSnapshot(snapshot, snapshotPath)) index.append(pet);
    }

    const generations = names.map(journalGeneration).filter((g): g is number => g !== undefined).sort((a, b) => a - b);
    let lastLength = 0;
    const snapshotLastId = index.lastId;
    for (const [i, generation] of generations.entries()) {
      const path = join(dir, journalFile(generation));
      const bytes = await openStep(`cannot read ${path}`, () => fs.readFile(path));
      const { pets, completeLength } = parseJournal(bytes, path);
      const isLast = i === generations.length - 1;
      if (completeLength < bytes.length && !isLast) throw new StoreOpenError(`${path} ends in an incomplete line but is not the newest journal`);
      for (const [line, pet] of pets.entries()) {
        // Lines at or below the snapshot's last id are in it already (a crash came before the journal
        // was cut); any other id that does not rise means the journals are not what this store wrote.
        if (pet.id <= snapshotLastId) continue;
        if (pet.id <= index.lastId) throw new StoreOpenError(`${path}, line ${line + 1}: id ${pet.id} is not above the previous id ${index.lastId}`);
        index.append(pet);
      }
      lastLength = completeLength;
    }

    let generation = generations.at(-1);
    let journal: StoreFile;
    if (generation === undefined) {
      generation = 1;
      journal = await openStep(`cannot create a journal in ${dir}`, () => createJournal(fs, dir, 1, options.onBackgroundError ?? reportToStderr));
    } else {
      const path = join(dir, journalFile(generation));
      journal = await openStep(`cannot open ${path} for writing`, async () => {
        const file = await fs.open(path, 'r+');
        // Cut a torn final line so that the next append starts on a line of its own.
        await file.truncate(lastLength);
        await file.datasync();
        return file;
      });
    }
    return new FileStore({
      dir, fs, lock, index, journal, generation, oldGenerations: generations.slice(0, -1),
      journalLength: lastLength, snapshotBytes, options,
    });
  }

  /**
   * Open and able to write. While a failed write is not yet cut back, reading this also starts a
   * recovery attempt, so that a server taken out of rotation by its `/readyz` comes back by itself.
   */
  get ready(): boolean {
    if (this.#failure !== undefined && !this.#closed) this.#committing ??= this.#commitLoop();
    return !this.#closed && this.#failure === undefined;
  }

  /** Journal bytes that may accumulate after a snapshot: at least its own size, so rewriting it is O(1) per create. */
  #compactBound(): number {
    return Math.max(this.#compactAfter, this.#snapshotBytes);
  }

  get size(): number {
    return this.#index.size;
  }

  list(query: ListQuery): ListPage {
    return this.#index.list(query);
  }

  get(id: number): Pet | undefined {
    return this.#index.get(id);
  }

  create(pet: NewPet): Promise<Pet> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ pet, resolve, reject });
      this.#committing ??= this.#commitLoop();
    });
  }

  /**
   * Commits everything waiting, one batch at a time, until nothing waits. Recovery from a failed
   * write runs here too, so that it never overlaps a commit.
   */
  async #commitLoop(): Promise<void> {
    try {
      for (;;) {
        if (this.#failure !== undefined) await this.#tryRecover();
        if (this.#queue.length === 0) break;
        const batch = this.#queue;
        this.#queue = [];
        await this.#commit(batch);
      }
    } finally {
      this.#committing = undefined;
    }
  }

  async #commit(batch: PendingCreate[]): Promise<void> {
    if (this.#failure !== undefined) {
      for (const p of batch) p.reject(new StoreUnavailableError('storage is failing; the pet was not stored', { cause: this.#failure }));
      return;
    }
    // Ids are taken even if the commit fails, so an id that a client might have seen is never reused.
    const pets = batch.map(({ pet }) => StoredPet.from({ id: this.#nextId++, name: pet.name, categoryId: pet.categoryId, status: pet.status }));
    const bytes = Buffer.from(journalLines(pets));
    try {
      await this.#journal.write(bytes, this.#journalLength);
      await this.#journal.datasync();
    } catch (error) {
      // Never retry an fsync and then acknowledge: Linux may already have dropped the pages.
      this.#failure = error instanceof Error ? error : new Error(String(error));
      for (const p of batch) p.reject(new StoreUnavailableError('the pet could not be written durably', { cause: error }));
      return;
    }
    this.#journalLength += bytes.length;
    for (const [i, pet] of pets.entries()) {
      this.#index.append(pet);
      batch[i]?.resolve(pet);
    }
    if (this.#compacting === undefined && this.#journalLength > this.#compactAt) await this.#startCompaction();
  }

  /**
   * After a failed write: reopen the journal and cut it back to its durable length, so that disk and
   * memory hold exactly the acknowledged pets again. While the disk still refuses, the failure stays.
   */
  async #tryRecover(): Promise<void> {
    const path = join(this.#dir, journalFile(this.#generation));
    try {
      await this.#journal.close().catch(this.#onBackgroundError); // the handle that failed; the file is reopened below
      this.#journal = await this.#fs.open(path, 'r+');
      await this.#journal.truncate(this.#journalLength);
      await this.#journal.datasync();
      this.#failure = undefined;
    } catch (error) {
      this.#failure = error instanceof Error ? error : new Error(String(error));
    }
  }

  /** Runs between commits: rotates to a new journal, then writes the snapshot in the background. */
  async #startCompaction(): Promise<void> {
    const next = this.#generation + 1;
    let journal: StoreFile;
    try {
      journal = await createJournal(this.#fs, this.#dir, next, this.#onBackgroundError);
    } catch (error) {
      this.#onBackgroundError(error);
      // Go on with the current journal; try again only after as much again has been written.
      this.#compactAt = this.#journalLength + this.#compactBound();
      return;
    }
    const previous = this.#journal;
    this.#oldGenerations.push(this.#generation);
    this.#journal = journal;
    this.#generation = next;
    this.#journalLength = 0;
    await previous.close().catch((error: unknown) => this.#onBackgroundError(error));
    const covered = [...this.#oldGenerations];
    this.#compacting = this.#writeSnapshot(this.#index.size)
      .then(() => this.#removeJournals(covered))
      .catch((error: unknown) => this.#onBackgroundError(error))
      .finally(() => {
        this.#compacting = undefined;
      });
  }

  /**
   * Atomic and durable replacement of the snapshot: write a uniquely named temp file, fsync it,
   * rename it over the snapshot, fsync the directory. A crash at any step leaves either the old or the
   * new snapshot, and the journals still hold everything after it.
   */
  async #writeSnapshot(count: number): Promise<void> {
    const temp = join(this.#dir, tempSnapshotFile(randomBytes(6).toString('hex')));
    const file = await this.#fs.open(temp, 'wx');
    let renamed = false;
    try {
      let position = 0;
      for (const chunk of snapshotChunks(this.#index.all, count)) {
        const bytes = Buffer.from(chunk);
        await file.write(bytes, position);
        position += bytes.length;
      }
      await file.datasync();
      await file.close();
      await this.#fs.rename(temp, join(this.#dir, SNAPSHOT_FILE));
      renamed = true;
      await this.#fs.syncDir(this.#dir);
      this.#snapshotBytes = position;
      this.#compactAt = this.#compactBound();
    } finally {
      if (!renamed) {
        await file.close().catch(this.#onBackgroundError); // the failure that brought us here is thrown below
        await this.#fs.unlink(temp).catch((error: unknown) => {
          if (errorCode(error) !== 'ENOENT') this.#onBackgroundError(error);
        });
      }
    }
  }

  async #removeJournals(generations: readonly number[]): Promise<void> {
    for (const generation of generations) {
      await this.#fs.unlink(join(this.#dir, journalFile(generation)));
    }
    this.#oldGenerations = this.#oldGenerations.filter((g) => !generations.includes(g));
    await this.#fs.syncDir(this.#dir);
  }

  /**
   * Waits for pending creates, then leaves one compacted snapshot and no journal, and releases the
   * directory. When the disk is failing the journals stay as they are: they hold every acknowledged pet.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    while (this.#committing !== undefined || this.#compacting !== undefined) {
      await this.#committing;
      await this.#compacting;
    }
    // Lines of a failed batch may have reached the journal: cut them before leaving the data behind.
    if (this.#failure !== undefined) await this.#tryRecover();
    try {
      if (this.#failure === undefined) {
        if (this.#journalLength > 0 || this.#oldGenerations.length > 0) {
          await this.#writeSnapshot(this.#index.size);
        }
        await this.#journal.close();
        await this.#removeJournals([...this.#oldGenerations, this.#generation]);
      } else {
        await this.#journal.close();
      }
    } finally {
      this.#lock.release();
    }
  }
}

async function createJournal(fs: FileSystem, dir: string, generation: number, report: (error: unknown) => void): Promise<StoreFile> {
  const path = join(dir, journalFile(generation));
  const journal = await fs.open(path, 'wx');
  try {
    await fs.syncDir(dir); // the new name must survive a crash before its first fsync'ed line does
    return journal;
  } catch (error) {
    // Leave no half-made journal behind: the next rotation must be able to create it again.
    await journal.close().catch(report);
    await fs.unlink(path).catch(report);
    throw error;
  }
}

/** Runs one step of opening the store; a system error becomes a StoreOpenError that says what failed. */
async function openStep<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    if (error instanceof StoreOpenError) throw error;
    throw new StoreOpenError(`${what} (${errorCode(error) ?? String(error)})`, { cause: error });
  }
}

async function readIfExists(fs: FileSystem, path: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw new StoreOpenError(`cannot read ${path} (${errorCode(error) ?? String(error)})`, { cause: error });
  }
}

function reportToStderr(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), 'PetStoreWarning');
}
