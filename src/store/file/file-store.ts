import type { LockFile } from '../../lib/lock-file.js';
import { CommitListeners } from '../commit-listeners.js';
import { petJson } from '../../pet/codec.js';
import { petWithId, samePet, type NewPet, type Pet } from '../../pet/pet.js';
import type { Compaction } from './compaction.js';
import type { IdMarks } from './id-marks.js';
import type { IdReservation } from './id-reservation.js';
import type { IdempotencyIndex, IdempotencyRecord } from './idempotency.js';
import type { Journal } from './journal.js';
import { openStore, type FileStoreOptions, type OpenedStore } from './open-store.js';
import type { PetIndex } from '../pet-index.js';
import { buildLine } from './records/record-line.js';
import { buildSkipLine } from './records/skip-line.js';
import { secondsSince } from '../observer.js';
import {
  IdempotencyKeyLimitError,
  IdempotencyKeyReusedError,
  RequestInProgressError,
  StoreUnavailableError,
  type CommitListener,
  type IdempotencyKey,
  type ListPage,
  type ListQuery,
  type ListText,
  type PetStore,
  type StatusCounts,
  type StoreObserver,
  type StoreStats,
} from '../store.js';

interface PendingCreate {
  pet: NewPet;
  record: IdempotencyRecord | undefined; // the idempotency key it was made with, stored in its line
  resolve: (pet: Pet) => void;
  reject: (error: Error) => void;
}

const NEWLINE = Buffer.from('\n');

const RECOVERY_INTERVAL_MS = 1000; // a failed journal tried again while no create comes: readiness comes back by itself

export type { FileStoreOptions } from './open-store.js';

/**
 * Pets kept in a JSON snapshot plus JSON-lines journals in one directory (see data-format.ts). A create is acknowledged
 * only
 * after its line is appended to the journal and fdatasync'ed; creates that arrive while a commit is under way wait and
 * are
 * committed together (group commit), so a create costs one append, never a rewrite. This class keeps the queue and the
 * public interface; loading, the journal, compaction and the id reservation each live in a module of their own.
 */
export class FileStore implements PetStore {
  readonly #lock: LockFile;
  readonly #index: PetIndex;
  readonly #journal: Journal;
  readonly #compaction: Compaction;
  readonly #report: (error: unknown) => void;
  readonly #idempotency: IdempotencyIndex;
  readonly #ids: IdMarks;
  readonly #reservation: IdReservation;
  readonly #commits = new CommitListeners();
  #queue: PendingCreate[] = [];
  #committing: Promise<void> | undefined;
  #recoveryTimer: NodeJS.Timeout | undefined;
  #observer: StoreObserver | undefined;
  #closed = false;

  private constructor({ lock, index, journal, compaction, idempotency, ids, reservation, report }: OpenedStore) {
    this.#reservation = reservation;
    this.#lock = lock;
    this.#idempotency = idempotency;
    this.#index = index;
    this.#journal = journal;
    this.#compaction = compaction;
    this.#report = report;
    this.#ids = ids;
  }

  /**
   * Opens (creating if needed) the store in `dir` (open-store.ts); a StoreOpenError names the file when the data cannot
   * be used.
   */
  static async open(dir: string, options: FileStoreOptions = {}): Promise<FileStore> {
    const opened = await openStore(dir, options);
    const store = new FileStore(opened);
    // Opened on a full disk: not ready, and the recovery timer brings readiness back once space returns.
    if (opened.journal.failure !== undefined) store.#scheduleRecovery();
    return store;
  }

  /** Open, and the last write to the journal succeeded (or a recovery since proved the disk writable). */
  get ready(): boolean {
    return !this.#closed && this.#journal.failure === undefined;
  }

  /**
   * The highest id that may have been handed out: the last pet's, or past it after an unclean stop (id-reservation.ts).
   */
  get lastId(): number {
    return this.#ids.handedOut;
  }

  get size(): number {
    return this.#index.size;
  }

  countByStatus(): StatusCounts {
    return this.#index.countByStatus();
  }

  stats(): StoreStats {
    return { createsWaiting: this.#queue.length };
  }

  /** For replication: the open journal's generation and fdatasync'ed length, and the highest id handed out. */
  durableJournal(): { generation: number; length: number; idsHandedOut: number } {
    return { generation: this.#journal.generation, length: this.#journal.length, idsHandedOut: this.#ids.handedOut };
  }

  /**
   * Holds the snapshot and the journals as they are (replication reads a stable set): compaction replaces or removes
   * none of them until the returned release is called. Appends go on.
   */
  holdFiles(): Promise<() => void> {
    return this.#compaction.hold();
  }

  observe(observer: StoreObserver): void {
    this.#observer = observer;
  }

  list(query: ListQuery): ListPage {
    return this.#index.list(query);
  }

  get(id: number): Pet | undefined {
    return this.#index.get(id);
  }

  /** The page's JSON text as bytes (see getText). */
  listText(query: ListQuery): ListText {
    return this.#index.listText(query);
  }

  /** The pet's JSON text: a read-only view of the store's own bytes; copy it before changing it. */
  getText(id: number): Buffer | undefined {
    return this.#index.getText(id);
  }

  /** See PetStore.watchCommits: called after each batch of creates, once their promises are resolved. */
  watchCommits(listener: CommitListener): () => void {
    return this.#commits.add(listener);
  }

  create(pet: NewPet): Promise<Pet> {
    return this.#enqueue(pet, undefined);
  }

  /** See PetStore.createOnce: the key is checked here, and stored in the pet's own journal line. */
  createOnce(pet: NewPet, { scope, key }: IdempotencyKey): Promise<{ pet: Pet; replayed: boolean }> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    const now = Date.now();
    const id = this.#idempotency.lookup(scope, key, now);
    const first = id === undefined ? undefined : this.#index.get(id);
    if (first !== undefined) {
      return samePet(first, pet)
        ? Promise.resolve({ pet: first, replayed: true })
        : Promise.reject(new IdempotencyKeyReusedError());
    }
    const begun = this.#idempotency.begin(scope, key, now);
    if (begun === 'taken') return Promise.reject(new RequestInProgressError());
    if (begun !== 'begun')
      return Promise.reject(new IdempotencyKeyLimitError(this.#idempotency.maxPerScope, begun.retryAfter));
    return this.#enqueue(pet, { scope, key, at: now }).then((stored) => ({ pet: stored, replayed: false }));
  }

  #enqueue(pet: NewPet, record: IdempotencyRecord | undefined): Promise<Pet> {
    if (this.#closed) {
      if (record !== undefined) this.#idempotency.end(record, undefined);
      return Promise.reject(new StoreUnavailableError('the store is closing'));
    }
    return new Promise((resolve, reject) => {
      this.#queue.push({ pet, record, resolve, reject });
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
      this.#refuse(batch, new StoreUnavailableError('storage is failing; the pet was not stored', { cause: failure }));
      this.#scheduleRecovery();
      return;
    }
    const refusal = this.#reservation.covers(this.#ids.handedOut + batch.length)
      ? undefined
      : await this.#reservation.beforeTaking(this.#ids.handedOut, batch.length);
    if (refusal !== undefined) return this.#refuse(batch, refusal);
    // Ids are taken even if the commit fails, so an id that a client might have seen is never reused.
    const pets = batch.map(({ pet }) => petWithId(this.#ids.handOut(), pet));
    const texts = pets.map(petJson);
    const lines = texts.map((text, i) => buildLine(text, (batch[i] as PendingCreate).record));
    const parts = lines.flatMap((line) => [line, NEWLINE]);
    // Ids handed out without a line (refused creates, an unclean stop's reservation) are written down as skipped first.
    if (this.#ids.recorded !== (pets[0] as Pet).id - 1)
      parts.unshift(buildSkipLine(this.#ids.recorded + 1, (pets[0] as Pet).id - 1));
    const began = process.hrtime.bigint();
    try {
      await this.#journal.append(Buffer.concat(parts));
    } catch (error) {
      this.#refuse(batch, new StoreUnavailableError('the pet could not be written durably', { cause: error }));
      this.#scheduleRecovery();
      return;
    }
    this.#ids.recordedUpTo((pets.at(-1) as Pet).id);
    this.#observer?.committed(secondsSince(began), batch.length);
    for (const [i, pet] of pets.entries()) {
      const line = lines[i] as Buffer;
      this.#index.appendLine(pet.id, pet.status, line, 0, line.length, 1, 1 + Buffer.byteLength(texts[i] as string));
      const pending = batch[i] as PendingCreate;
      if (pending.record !== undefined) this.#idempotency.end(pending.record, pet.id);
      pending.resolve(pet);
    }
    this.#commits.committed((pets.at(-1) as Pet).id);
    this.#reservation.ahead(this.#ids.handedOut);
    await this.#compaction.afterCommit();
  }

  /** Refuses a batch: only a stored create is remembered, so each key may be used again. */
  #refuse(batch: readonly PendingCreate[], error: Error): void {
    this.#observer?.failed();
    for (const p of batch) {
      if (p.record !== undefined) this.#idempotency.end(p.record, undefined);
      p.reject(error);
    }
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
   * Waits for pending creates, leaves one compacted snapshot and the empty journal it names, releases the directory; on
   * a failing disk the journals stay.
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
      // A clean stop says so in pets-ids.json: the next start goes on from the last id, without a gap.
      if (this.#journal.failure === undefined)
        await this.#compaction.finish().then(() => this.#reservation.stop(this.#ids.handedOut));
      else await this.#journal.close();
    } finally {
      this.#lock.release();
    }
  }
}
