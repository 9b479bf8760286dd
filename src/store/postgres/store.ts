import type { Sql } from 'postgres';
import { petJson } from '../../pet/codec.js';
import { petWithId, type NewPet, type Pet } from '../../pet/pet.js';
import { CommitListeners } from '../commit-listeners.js';
import { Availability } from './availability.js';
import { insertBatch, type BatchEntry } from './batch.js';
import { CommitWatch } from './commit-watch.js';
import { isUnavailable, openError, openPool } from './driver.js';
import { keyedPet, replayOf } from './idempotency.js';
import { addFirstKey, readKeys, type KeyRecord } from './keys.js';
import { PetCopy } from './pet-copy.js';
import { Rewind } from './rewind.js';
import { readHighestIdAndPosition } from './lineage.js';
import { pageText, readHighestId, readPage, readPet } from './pet-reads.js';
import { POSTGRES_DEFAULTS, type PostgresStoreOptions } from './options.js';
import { migrate } from './schema.js';
import { countByStatus } from './status-counts.js';
import { poolStats, secondsSince, type StatusCounts, type StoreObserver, type StoreStats } from '../observer.js';
import {
  RequestInProgressError,
  StoreOpenError,
  StoreUnavailableError,
  type CommitListener,
  type IdempotencyKey,
  type ListPage,
  type ListQuery,
  type ListText,
  type PetStore,
  type PetText,
} from '../store.js';

interface PendingCreate extends BatchEntry {
  /** The stored pet, or undefined when its idempotency key had been taken meanwhile (nothing stored). */
  resolve: (pet: Pet | undefined) => void;
  reject: (error: Error) => void;
}

// Creates committed in one statement at most; more wait for the next one.
const MAX_BATCH = 500;

/**
 * Pets in PostgreSQL, shared by every instance on the same database.
 *
 * Creates that arrive together, with or without an idempotency key, are committed in one statement
 * (group commit, batch.ts). That statement takes the row lock of `pet_ids` and holds it until its
 * COMMIT, so the creates of all instances commit one batch at a time, in id order: a pet with a
 * smaller id is always visible before one with a larger id, and a reader paging with `after` misses
 * none. A pet is acknowledged only after COMMIT.
 *
 * Reads are answered from a copy of the pets in this instance's memory (pet-copy.ts), kept current
 * from the commits of every instance; with `databaseReads`, and while the copy is being filled at
 * start, from the database.
 */
export class PostgresStore implements PetStore {
  readonly #sql: Sql;
  readonly #deadline: number;
  readonly #maxWaiting: number;
  readonly #maxReads: number;
  readonly #windowSeconds: number;
  readonly #availability: Availability;
  readonly #watch: CommitWatch;
  readonly #copy: PetCopy | undefined;
  readonly #rewind: Rewind;
  /** A failure in the background that is not the database being away. */
  readonly #report: (error: unknown) => void;
  /** With the copy, the listeners of watchCommits, told once the copy holds the pets. */
  readonly #listeners = new CommitListeners();
  // Keys of this instance's creates still committing: a repeat here is a 409 (one on another instance waits on the id
  // row).
  readonly #pendingKeys = new Set<string>();
  #queue: PendingCreate[] = [];
  #committing: Promise<void> | undefined;
  #reads = 0;
  #observer: StoreObserver | undefined;
  #closed = false;

  private constructor(sql: Sql, url: string, options: PostgresStoreOptions) {
    this.#sql = sql;
    const statementTimeout = options.statementTimeout ?? POSTGRES_DEFAULTS.statementTimeout;
    this.#deadline = 2 * statementTimeout;
    this.#maxWaiting = options.maxWaitingCreates ?? POSTGRES_DEFAULTS.maxWaitingCreates;
    this.#maxReads = options.maxReads ?? POSTGRES_DEFAULTS.maxReads;
    this.#windowSeconds = options.idempotencyWindow ?? POSTGRES_DEFAULTS.idempotencyWindow;
    this.#report = options.onBackgroundError ?? (() => {});
    this.#availability = this.#newAvailability(options);
    this.#copy = options.databaseReads === true ? undefined : this.#newCopy();
    this.#rewind = this.#newRewind(options);
    this.#watch = new CommitWatch({
      url,
      statementTimeout,
      highestId: () => this.#highestId(),
      onError: this.#report,
      onListening: () => this.#checkRewind(),
      onListenLost: () => this.#rememberNewest(),
    });
    const copy = this.#copy;
    if (copy === undefined) return;
    // Every commit heard of and not yet held is read into the copy.
    this.#watch.add((id) => id > copy.lastId && copy.catchUp());
    void copy.fill().then(({ pets, seconds }) => options.onFilled?.(pets, seconds));
  }

  /** Whether the database can be used, as the last statement found it; a write probe tells when it is back. */
  #newAvailability(options: PostgresStoreOptions): Availability {
    // The probe is a write that changes nothing: its success means creates can be taken again.
    const probe = (): Promise<unknown> =>
      this.#guard(this.#sql`UPDATE petstore.pet_ids SET last_id = last_id`.execute(), 'write');
    return new Availability(
      (available, error) => {
        if (available) this.#checkRewind();
        else this.#rememberNewest();
        options.onAvailability?.(available, error);
      },
      probe,
      (error) => error instanceof StoreUnavailableError,
    );
  }

  #newCopy(): PetCopy {
    const grew = (id: number): void => {
      this.#rewind.saw(id);
      this.#listeners.committed(id);
    };
    return new PetCopy(this.#sql, (work) => this.#read(work), grew, this.#report);
  }

  #newRewind(options: PostgresStoreOptions): Rewind {
    const sql = this.#sql;
    const copy = this.#copy;
    return new Rewind({
      sql,
      guard: (work) => this.#read(work, 'write'),
      refill: copy && (() => copy.refill()),
      readText: async (id) => {
        const pet = await readPet(sql, id);
        return pet && petJson(pet);
      },
      directory: options.lostPetsDirectory ?? process.cwd(),
      onWentBack: options.onWentBack ?? (() => {}),
      onRecovered: options.onRecovered ?? (() => {}),
      onError: this.#report,
    });
  }

  /**
   * The id counter, as the commit watch reads it, with the WAL position: below an id seen committed, or behind a
   * position seen, the database went back.
   */
  async #highestId(): Promise<number> {
    const floor = this.#rewind.highWater;
    const positionFloor = this.#rewind.positionFloor();
    const { id, position } = await readHighestIdAndPosition(this.#sql);
    this.#rewind.counter(id, floor);
    this.#rewind.position(position, positionFloor);
    return id;
  }

  /** A database back, or a new listening connection, may be a restarted database or another one (a failover). */
  #checkRewind(): void {
    this.#rewind.check().catch((e: unknown) => e instanceof StoreUnavailableError || this.#report(e));
  }

  /** The database seen away, by a statement or by the listening connection: what the copy held is looked for later. */
  #rememberNewest(): void {
    const copy = this.#copy;
    if (copy !== undefined) this.#rewind.remember(copy.lastId, copy.getText(copy.lastId));
  }

  /** Connects, creates or migrates the schema; refuses with a StoreOpenError when the database cannot be used. */
  static async open(url: string, options: PostgresStoreOptions = {}): Promise<PostgresStore> {
    const sql = await openPool(url, {
      max: options.pool ?? POSTGRES_DEFAULTS.pool,
      statementTimeout: options.statementTimeout ?? POSTGRES_DEFAULTS.statementTimeout,
    });
    try {
      await migrate(sql);
    } catch (error) {
      await sql.end({ timeout: 1 });
      throw error instanceof StoreOpenError ? error : openError(url, error);
    }
    return new PostgresStore(sql, url, options);
  }

  /** Open, the copy filled, and the last statement that reached the database succeeded (or a write probe since did). */
  get ready(): boolean {
    return !this.#closed && this.#availability.available && (this.#copy?.filled ?? true) && !this.#rewind.recovering;
  }

  list(query: ListQuery): ListPage | Promise<ListPage> {
    return this.#copy?.filled === true ? this.#copy.list(query) : this.#read(() => readPage(this.#sql, query));
  }

  /** From the copy; an id above its newest is asked of the database (a pet just created through another instance). */
  get(id: number): Pet | undefined | Promise<Pet | undefined> {
    return this.#copy?.filled === true && id <= this.#copy.lastId
      ? this.#copy.get(id)
      : this.#read(() => readPet(this.#sql, id));
  }

  listText(query: ListQuery): ListText | Promise<ListText> {
    return this.#copy?.filled === true
      ? this.#copy.listText(query)
      : this.#read(() => readPage(this.#sql, query)).then(pageText);
  }

  getText(id: number): PetText | undefined | Promise<PetText | undefined> {
    return this.#copy?.filled === true && id <= this.#copy.lastId
      ? this.#copy.getText(id)
      : this.#read(() => readPet(this.#sql, id)).then((p) => p && petJson(p));
  }

  /**
   * See PetStore.watchCommits: this instance's commits at once, other instances' by LISTEN (commit-watch.ts), through
   * the copy if there is one.
   */
  watchCommits(listener: CommitListener): () => void {
    return this.#copy === undefined ? this.#watch.add(listener) : this.#listeners.add(listener);
  }

  create(pet: NewPet): Promise<Pet> {
    // Without an idempotency key nothing can stop the pet from being stored.
    return this.#enqueue(pet, undefined) as Promise<Pet>;
  }

  /**
   * See PetStore.createOnce. The key is stored in the pet's own transaction, unique per (scope, key)
   * in the database. A repeat on this instance while the first is committing is a 409; on another
   * instance it waits for the first's COMMIT on the id row, stores nothing, and gets the replay.
   */
  async createOnce(pet: NewPet, key: IdempotencyKey): Promise<{ pet: Pet; replayed: boolean }> {
    // Scopes are hashes and hold no newline, so a scope and a key cannot run together ambiguously.
    const name = `${key.scope}\n${key.key}`;
    if (this.#pendingKeys.has(name)) throw new RequestInProgressError();
    this.#pendingKeys.add(name);
    let stored: Pet | undefined;
    try {
      const first = await this.#read(() => keyedPet(this.#sql, key, this.#windowSeconds), 'write');
      if (first !== undefined) return replayOf(first, pet);
      stored = await this.#enqueue(pet, key);
    } finally {
      this.#pendingKeys.delete(name);
    }
    if (stored !== undefined) return { pet: stored, replayed: false };
    // Another instance committed this key while this create waited for the id row.
    const first = await this.#read(() => keyedPet(this.#sql, key, this.#windowSeconds), 'write');
    if (first === undefined) throw new RequestInProgressError(); // already past its window: a retry creates
    return replayOf(first, pet);
  }

  #enqueue(pet: NewPet, key: IdempotencyKey | undefined): Promise<Pet | undefined> {
    if (this.#closed) return Promise.reject(new StoreUnavailableError('the store is closing'));
    if (this.#rewind.recovering) return Promise.reject(wentBackError());
    // The queue is bounded: when the database is slow or gone, clients are told at once instead of waiting in memory.
    if (this.#queue.length >= this.#maxWaiting)
      return Promise.reject(new StoreUnavailableError('too many creates are waiting for the database'));
    return new Promise((resolve, reject) => {
      this.#queue.push({ pet, key, resolve, reject });
      this.#committing ??= this.#commitLoop();
    });
  }

  countByStatus(): Promise<StatusCounts> {
    return this.#read(() => countByStatus(this.#sql));
  }

  stats(): StoreStats {
    return {
      createsWaiting: this.#queue.length,
      pool: poolStats(this.#sql.options.max, this.#reads + (this.#committing === undefined ? 0 : 1)),
    };
  }

  observe(observer: StoreObserver): void {
    this.#observer = observer;
  }

  /** The API keys in the database (a read like any other: it also notices that the database went away). */
  keys(): Promise<KeyRecord[]> {
    return this.#read(() => readKeys(this.#sql));
  }

  /** Stores `key` if this database never had a key; whether it did. */
  addFirstKey(key: KeyRecord): Promise<boolean> {
    return addFirstKey(this.#sql, key);
  }

  async #commitLoop(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#commit(this.#queue.splice(0, MAX_BATCH));
    } finally {
      this.#committing = undefined;
    }
  }

  async #commit(batch: PendingCreate[]): Promise<void> {
    if (this.#rewind.recovering) {
      for (const p of batch) p.reject(wentBackError());
      return;
    }
    const floor = this.#rewind.highWater;
    const statement = insertBatch(this.#sql, batch, this.#windowSeconds, floor);
    const began = process.hrtime.bigint();
    try {
      const result = (await this.#guard(statement, 'write')) ?? (await this.#refused(floor));
      this.#availability.set(true);
      this.#rewind.saw(result.base + batch.length);
      this.#observer?.committed(secondsSince(began), batch.length);
      const stored = batch.map((p, i) => {
        const id = result.base + i + 1;
        return p.key === undefined || result.keyedIds.has(id) ? petWithId(id, p.pet) : undefined;
      });
      // This instance reads its own creates at once: the copy holds them before the 201s.
      if (this.#copy?.filled === true)
        await this.#copy.own(
          result.base,
          stored.filter((pet) => pet !== undefined),
        );
      else this.#copy?.catchUp();
      for (const [i, p] of batch.entries()) p.resolve(stored[i]);
      if (this.#copy === undefined) this.#watch.committed(result.base + batch.length);
      else this.#listeners.committed(this.#copy.lastId);
    } catch (error) {
      this.#observer?.failed();
      for (const p of batch) p.reject(error as Error);
    }
    // A statement given up on may still be running: the next batch starts only once it has ended,
    // so that abandoned statements never pile up on the pool.
    await Promise.allSettled([statement]);
  }

  /** Why a batch stored nothing: the counter below an id seen committed (the database went back), or no id left. */
  async #refused(floor: number): Promise<never> {
    const highest = await this.#guard(readHighestId(this.#sql), 'write');
    if (highest < floor) {
      this.#rewind.counter(highest, floor);
      throw wentBackError();
    }
    throw new Error('pet ids are exhausted: the next id would not be a safe integer');
  }

  /** Runs a read, bounded in number and time; what the database cannot answer becomes a StoreUnavailableError. */
  async #read<T>(work: () => Promise<T>, operation: 'read' | 'write' = 'read'): Promise<T> {
    if (this.#closed) throw new StoreUnavailableError('the store is closing', { operation });
    if (this.#reads >= this.#maxReads)
      throw new StoreUnavailableError('too many reads are waiting for the database', { operation });
    this.#reads++;
    const running = work();
    void Promise.allSettled([running]).then(() => this.#reads--);
    return this.#guard(running, operation);
  }

  /** `work` within the deadline; an unreachable database marks the store unavailable until a write probe succeeds. */
  async #guard<T>(work: Promise<T>, operation: 'read' | 'write'): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Error(`the database did not answer within ${this.#deadline} ms`);
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(late), this.#deadline);
    });
    try {
      return await Promise.race([work, deadline]);
    } catch (error) {
      if (error !== late && !isUnavailable(error)) throw error;
      this.#availability.set(false, error);
      throw new StoreUnavailableError(`the database cannot be used right now: ${(error as Error).message}`, {
        cause: error,
        operation,
      });
    } finally {
      clearTimeout(timer);
    }
  }

  /** Waits for the creates already accepted, then closes the pool. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#availability.close();
    this.#rewind.close();
    this.#copy?.close();
    while (this.#committing !== undefined) await this.#committing;
    await this.#watch.close();
    await this.#sql.end({ timeout: 5 });
  }
}

function wentBackError(): StoreUnavailableError {
  return new StoreUnavailableError(
    'the database lost commits (it went back): creates wait until no id seen before ' + 'can be handed out again',
  );
}
