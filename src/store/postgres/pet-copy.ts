import type { Sql } from 'postgres';
import { monotonicMs } from '../../lib/monotonic.js';
import { petJson } from '../../pet/codec.js';
import type { Pet } from '../../pet/pet.js';
import { PetIndex } from '../pet-index.js';
import { StoreUnavailableError, type ListPage, type ListQuery, type ListText } from '../store.js';
import { readHighestId } from './pet-reads.js';
import { eachPet, IN_PLACE_BYTES, readTexts } from './pet-texts.js';

/**
 * A read of the pets into the copy failed while the database was there: told apart from the commit watch's failures in
 * the log.
 */
export class CopyReadError extends Error {
  override name = 'CopyReadError';
}

/** Pets read in one statement, at start and catching up: each page is a short indexed range scan. */
const COPY_PAGE = 10_000;
/** A read of the copy that failed (the database away) is tried again this often. */
const RETRY_MS = 250;
/**
 * Pets the fill makes room for at once at most: the highest id is their number but for ids skipped,
 * and untouched room costs address space, not memory; a larger store grows its arrays as it fills.
 */
const MAX_RESERVED = 1 << 24;
/**
 * A read that fails for another reason than the database being away is reported at most this often while it goes on.
 */
const REPORT_EVERY_MS = 60_000;

/** How the copy's statements run: the store's bounded, timed reads (`#read` in store.ts). */
export type Guard = <T>(work: () => Promise<T>) => Promise<T>;

/**
 * The pets of the database in this instance's memory, as the file store keeps its own (PetIndex:
 * each pet's exact JSON text off the heap), so that lists, single pets, streams and waits are
 * answered without the database. Filled at start by reading the table in id order, page by page;
 * then kept current by reading on from its newest id whenever a commit is heard of (commit-watch.ts)
 * and by appending this instance's own commits. Pets commit in id order on every instance (the id
 * row lock, batch.ts), so once a pet is read every pet with a smaller id is readable too, and
 * reading on from the newest id never skips one. Every change runs in one chain, one at a time.
 */
export class PetCopy {
  #index = new PetIndex();
  readonly #sql: Sql;
  readonly #guard: Guard;
  /** Told the newest id each time pets were added by a catch-up (not by `own`: its caller tells). */
  readonly #grew: (lastId: number) => void;
  readonly #report: (error: unknown) => void;
  #reportedAt = -Infinity;
  #chain: Promise<void> = Promise.resolve();
  #filled = false;
  /** A catch-up is waiting in the chain: another request for one joins it. */
  #catchUpQueued = false;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(sql: Sql, guard: Guard, grew: (lastId: number) => void, report: (error: unknown) => void) {
    this.#sql = sql;
    this.#guard = guard;
    this.#grew = grew;
    this.#report = report;
  }

  /** Whether the fill at start is complete: until then, reads go to the database. */
  get filled(): boolean {
    return this.#filled;
  }

  get lastId(): number {
    return this.#index.lastId;
  }

  get size(): number {
    return this.#index.size;
  }

  /**
   * Reads the whole table, a page at a time, giving the event loop a turn between pages; retries while the database is
   * away.
   */
  fill(): Promise<{ pets: number; seconds: number }> {
    const began = process.hrtime.bigint();
    return this.#then(async () => {
      await this.#readAll();
      return { pets: this.size, seconds: Number(process.hrtime.bigint() - began) / 1e9 };
    });
  }

  /**
   * The database went back (rewind.ts): reads the whole table again into a new copy, reads answered
   * from the database meanwhile; returns the texts of the pets the old copy held that the database no
   * longer holds as they were.
   */
  refill(): Promise<Buffer[]> {
    return this.#then(async () => {
      const old = this.#index;
      this.#index = new PetIndex();
      this.#filled = false;
      await this.#readAll();
      const lost: Buffer[] = [];
      for (const { id, bytes, textStart, textEnd } of old.lines(old.size)) {
        const text = bytes.subarray(textStart, textEnd);
        if (this.#index.getText(id)?.equals(text) !== true) lost.push(Buffer.from(text));
      }
      return lost;
    });
  }

  /** Reads on from the newest id (a commit was heard of); requests made while one waits share it. */
  catchUp(): void {
    if (this.#catchUpQueued || this.#closed) return;
    this.#catchUpQueued = true;
    void this.#then(async () => {
      this.#catchUpQueued = false;
      const before = this.lastId;
      try {
        await this.#readOn(Number.MAX_SAFE_INTEGER);
      } catch (error) {
        this.#failed(error);
        this.#retryLater();
      }
      if (this.lastId > before) this.#grew(this.lastId);
    });
  }

  /**
   * This instance's own batch, just committed with the ids after `base`: the pets other instances
   * committed before it (ids up to `base`) are read first, so that none is skipped; then the batch is
   * appended as it is. Resolves once the copy holds it, or could not (the database away: read later).
   */
  own(base: number, pets: readonly Pet[]): Promise<void> {
    return this.#then(async () => {
      try {
        if (this.lastId < base) await this.#readOn(base);
      } catch (error) {
        this.#failed(error);
        this.#retryLater();
        return;
      }
      // Everything up to `base` is read (a missing id is missing for good): the batch follows.
      for (const pet of pets) if (pet.id > this.lastId) this.#append(pet);
    });
  }

  list(query: ListQuery): ListPage {
    return this.#index.list(query);
  }

  listText(query: ListQuery): ListText {
    return this.#index.listText(query);
  }

  getText(id: number): Buffer | undefined {
    return this.#index.getText(id);
  }

  get(id: number): Pet | undefined {
    return this.#index.get(id);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
  }

  /** Reads every pet after the newest; retries while the database is away; then the copy is filled. */
  async #readAll(): Promise<void> {
    while (!this.#closed) {
      try {
        await this.#reserve();
        await this.#readOn(Number.MAX_SAFE_INTEGER);
        break;
      } catch (error) {
        // A read failed mid-fill (the database away, or refused and reported): what was read stays; go on from there.
        this.#failed(error);
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
    this.#filled = !this.#closed;
    this.#grew(this.lastId);
  }

  /**
   * Before the fill, arrays for as many pets as the highest id: grown by doubling as pets came, they
   * left each smaller array behind, and the process kept that room (7 bytes a pet more at a million,
   * bench/results.md, "The copy's fill and memory").
   */
  async #reserve(): Promise<void> {
    if (this.size > 0) return; // a fill resumed after the database came back: grows as it goes
    const highest = await this.#guard(() => readHighestId(this.#sql));
    if (this.size === 0) this.#index = new PetIndex(Math.min(highest, MAX_RESERVED));
  }

  /**
   * Reads and appends every pet after the newest, up to `upTo`, a page per statement. A large page's
   * text stays where it is, one arena chunk, copying nothing; a small one (a catch-up after a commit)
   * is copied, so that the arena does not keep a Buffer per commit heard of.
   */
  async #readOn(upTo: number): Promise<void> {
    for (;;) {
      const page = await this.#guard(() => readTexts(this.#sql, this.lastId, upTo, COPY_PAGE));
      const index = this.#index;
      const count =
        page.length >= IN_PLACE_BYTES
          ? eachPet(page, (id, status, start, end) => index.appendInPlace(id, status, page, start, end))
          : eachPet(page, (id, status, start, end) => index.appendLine(id, status, page, start, end, start, end));
      if (count < COPY_PAGE || this.#closed) return;
      // A turn for the event loop between pages: a fill of a million pets never holds it for long.
      await new Promise((r) => setImmediate(r));
    }
  }

  #append(pet: Pet): void {
    const bytes = Buffer.from(petJson(pet));
    this.#index.appendLine(pet.id, pet.status, bytes, 0, bytes.length, 0, bytes.length);
  }

  /**
   * The database away is the store's to tell (/readyz, its availability log lines); any other failure
   * (a permission taken away, a statement refused) would be tried again every RETRY_MS without a word.
   */
  #failed(error: unknown): void {
    if (error instanceof StoreUnavailableError || this.#closed) return;
    const now = monotonicMs();
    if (now - this.#reportedAt < REPORT_EVERY_MS) return;
    this.#reportedAt = now;
    const reason = error instanceof Error ? error.message : String(error);
    this.#report(
      new CopyReadError(
        `the pets cannot be read into this instance's memory, trying again every ${RETRY_MS} ms: ${reason}`,
        { cause: error },
      ),
    );
  }

  #retryLater(): void {
    if (this.#retry !== undefined || this.#closed) return;
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.catchUp();
    }, RETRY_MS);
    this.#retry.unref();
  }

  /** Runs `work` after every change before it. */
  #then<T>(work: () => Promise<T>): Promise<T> {
    const done = this.#chain.then(work);
    this.#chain = done.then(
      () => undefined,
      () => undefined,
    );
    return done;
  }
}
