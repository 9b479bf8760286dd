import { makeDirectory, nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import type { LockFile } from '../lib/lock-file.js';
import { assertPrivateDirectory } from '../lib/private-file.js';
import { reportToStderr } from '../lib/system-error.js';
import { StoredPet, type NewPet, type Pet } from '../pet/pet.js';
import { Compaction } from './compaction.js';
import { journalLines } from './data-format.js';
import { Journal } from './journal.js';
import { loadDirectory, openStep } from './load.js';
import { DirectoryLock } from './lock.js';
import type { PetIndex } from './pet-index.js';
import { StoreUnavailableError, type ListPage, type ListQuery, type PetStore } from './store.js';

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
// How often a failed journal is tried again while no create arrives, so that readiness comes back by itself.
const RECOVERY_INTERVAL_MS = 1000;
// Below this much free space at open, a probe write decides whether the store starts ready.
const LOW_SPACE_BYTES = 64 * 1024;

/**
 * Pets kept in a JSON snapshot plus JSON-lines journals in one directory (see data-format.ts).
 *
 * A create is acknowledged only after its line is appended to the journal and fdatasync'ed; creates
 * that arrive while a commit is under way wait and are committed together (group commit), so a
 * create costs one append, never a rewrite. This class keeps the queue and the public interface;
 * loading, the journal and compaction each live in a module of their own.
 */
export class FileStore implements PetStore {
  readonly #lock: LockFile;
  readonly #index: PetIndex;
  readonly #journal: Journal;
  readonly #compaction: Compaction;
  readonly #report: (error: unknown) => void;
  #nextId: number;
  #queue: PendingCreate[] = [];
  #committing: Promise<void> | undefined;
  #recoveryTimer: NodeJS.Timeout | undefined;
  #closed = false;

  private constructor(lock: LockFile, index: PetIndex, journal: Journal, compaction: Compaction, report: (error: unknown) => void) {
    this.#lock = lock;
    this.#index = index;
    this.#journal = journal;
    this.#compaction = compaction;
    this.#report = report;
    this.#nextId = index.lastId + 1;
  }

  /**
   * Opens (creating if needed) the store in `dir`: takes the directory lock, loads what is there and
   * cuts a torn final journal line. Refuses with a StoreOpenError naming the file when the data cannot be used.
   */
  static async open(dir: string, options: FileStoreOptions = {}): Promise<FileStore> {
    const fs = options.fileSystem ?? nodeFileSystem;
    const report = options.onBackgroundError ?? reportToStderr;
    await openStep(`cannot create data directory ${dir}`, () => makeDirectory(fs, dir));
    await openStep(`cannot use data directory ${dir}`, async () => assertPrivateDirectory(dir));
    const lock = DirectoryLock.acquire(dir);
    try {
      const { index, snapshotBytes, generations, journalLength } = await loadDirectory(fs, dir);
      const newest = generations.at(-1);
      const journal = newest === undefined
        ? await openStep(`cannot create a journal in ${dir}`, () => Journal.create(fs, dir, 1, report))
        : await openStep(`cannot open the journal of generation ${newest} in ${dir} for writing`, () => Journal.reopen(fs, dir, newest, journalLength));
      const compaction = new Compaction(fs, dir, journal, index, {
        compactAfter: options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER, snapshotBytes, oldGenerations: generations.slice(0, -1), report,
      });
      // On a full disk the store still opens and serves reads (nothing at open needs a free block),
      // but is not ready: the probe fails, and the recovery timer brings readiness back once space returns.
      const available = await openStep(`cannot read the free space of ${dir}`, () => fs.availableBytes(dir));
      if (available < LOW_SPACE_BYTES) await journal.recover(report);
      const store = new FileStore(lock, index, journal, compaction, report);
      if (journal.failure !== undefined) store.#scheduleRecovery();
      return store;
    } catch (error) {
      lock.release();
      throw error;
    }
  }

  /** Open, and the last write to the journal succeeded (or a recovery since proved the disk writable). */
  get ready(): boolean {
    return !this.#closed && this.#journal.failure === undefined;
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

  /** Commits everything waiting, one batch at a time, until nothing waits. */
  async #commitLoop(): Promise<void> {
    try {
      while (this.#queue.length > 0) {
        const batch = this.#queue;
        this.#queue = [];
        // A failed journal gets one recovery attempt before the batch: a disk with space again serves it.
        if (this.#journal.failure !== undefined) await this.#journal.recover(this.#report);
        await this.#commit(batch);
      }
    } finally {
      this.#committing = undefined;
    }
  }

  async #commit(batch: PendingCreate[]): Promise<void> {
    const failure = this.#journal.failure;
    if (failure !== undefined) {
      for (const p of batch) p.reject(new StoreUnavailableError('storage is failing; the pet was not stored', { cause: failure }));
      this.#scheduleRecovery();
      return;
    }
    // Ids are taken even if the commit fails, so an id that a client might have seen is never reused.
    const pets = batch.map(({ pet }) => StoredPet.from({ id: this.#nextId++, name: pet.name, categoryId: pet.categoryId, status: pet.status }));
    try {
      await this.#journal.append(Buffer.from(journalLines(pets)));
    } catch (error) {
      for (const p of batch) p.reject(new StoreUnavailableError('the pet could not be written durably', { cause: error }));
      this.#scheduleRecovery();
      return;
    }
    for (const [i, pet] of pets.entries()) {
      this.#index.append(pet);
      batch[i]?.resolve(pet);
    }
    await this.#compaction.afterCommit();
  }

  /** While the journal is failed and no create arrives, try it again now and then (never during a commit). */
  #scheduleRecovery(): void {
    if (this.#recoveryTimer !== undefined || this.#closed) return;
    this.#recoveryTimer = setTimeout(() => {
      this.#recoveryTimer = undefined;
      if (this.#closed || this.#journal.failure === undefined) return;
      this.#committing ??= this.#journal.recover(this.#report).then((ok) => {
        this.#committing = undefined;
        if (!ok) this.#scheduleRecovery();
        else if (this.#queue.length > 0) this.#committing = this.#commitLoop();
      });
    }, RECOVERY_INTERVAL_MS);
    this.#recoveryTimer.unref();
  }

  /**
   * Waits for pending creates, then leaves one compacted snapshot and no journal, and releases the
   * directory. When the disk is failing the journals stay as they are: they hold every acknowledged pet.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#recoveryTimer);
    while (this.#committing !== undefined || this.#compaction.running !== undefined) {
      await this.#committing;
      await this.#compaction.running;
    }
    try {
      // Lines of a failed batch may have reached the journal: cut them before leaving the data behind.
      if (this.#journal.failure !== undefined) await this.#journal.recover(this.#report);
      if (this.#journal.failure === undefined) await this.#compaction.finish();
      else await this.#journal.close();
    } finally {
      this.#lock.release();
    }
  }
}
