import type { Sql } from 'postgres';
import { CommitListeners } from '../commit-listeners.js';
import { type CommitListener, StoreUnavailableError } from '../store.js';
import { COMMIT_CHANNEL } from './batch.js';
import { isUnavailable, openListener } from './driver.js';

/** While the listening connection is down, the highest id is read this often instead. */
const POLL_INTERVAL_MS = 250;
/** While it listens, the highest id is read this often all the same: a commit whose NOTIFY never came is read. */
const BACKSTOP_MS = 1000;

export interface CommitWatchOptions {
  url: string;
  statementTimeout: number;
  /** The highest id handed out by any instance, read through the pool. */
  highestId(): Promise<number>;
  /** An error that is not the database being away (a missing table, a refused LISTEN). */
  onError(error: unknown): void;
  /** Told each time LISTEN succeeds, on a new connection: the database may have restarted, or be another. */
  onListening?(): void;
  /**
   * Told when the listening connection is lost or cannot be had (it may never have come back since the last
   * outage): what the database held until now may be compared with it later.
   */
  onListenLost?(): void;
}

/**
 * How an instance learns of the pets committed through any instance (PetStore.watchCommits). Every
 * batch NOTIFYs COMMIT_CHANNEL at its COMMIT (batch.ts); this LISTENs on a connection of its own.
 * While that connection is down (cut, the database restarting) the highest id is read every
 * POLL_INTERVAL_MS instead, and LISTEN is tried again each time; once it is back, the highest id is
 * read once more, since a NOTIFY sent while nobody listened is lost. The first listener starts it.
 *
 * A notification is a hint, never a fact: anyone who may connect may NOTIFY the channel, with any
 * payload, as often and in any order. So its payload is not read at all; each hint makes the watch
 * read the highest id from the table (hints that come while a read is running share one more read),
 * and listeners hear only what the table says. A forged id cannot raise what they heard above the
 * pets to come, and a lost notification costs at most BACKSTOP_MS.
 */
export class CommitWatch {
  readonly #options: CommitWatchOptions;
  readonly #listeners = new CommitListeners();
  #connection: Promise<Sql> | undefined;
  #listening = false;
  #attempting = false;
  /** An unexpected failure was reported since LISTEN last succeeded: the next ones, every 250 ms, are not. */
  #reported = false;
  #timer: NodeJS.Timeout | undefined;
  #backstop: NodeJS.Timeout | undefined;
  /** A read of the highest id on a hint is running; `#hintedAgain`: another hint came meanwhile. */
  #hinting = false;
  #hintedAgain = false;
  #closed = false;

  constructor(options: CommitWatchOptions) {
    this.#options = options;
  }

  add(listener: CommitListener): () => void {
    const stop = this.#listeners.add(listener);
    if (this.#connection === undefined && !this.#closed) {
      this.#connection = openListener(this.#options.url, this.#options.statementTimeout, {
        onNotify: (channel) => this.#notified(channel),
        onClose: () => this.#down(),
      });
      void this.#listen();
      this.#backstop = setInterval(() => void this.#hint(), BACKSTOP_MS);
      this.#backstop.unref();
    }
    return stop;
  }

  /** This instance's own commits, told at once (their NOTIFY comes back later). */
  committed(lastId: number): void {
    this.#listeners.committed(lastId);
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    clearInterval(this.#backstop);
    const connection = await this.#connection;
    await connection?.end({ timeout: 1 });
  }

  #notified(channel: string): void {
    if (channel === COMMIT_CHANNEL) void this.#hint();
  }

  /** Reads the highest id; a hint while it runs makes one more read once it is done. */
  async #hint(): Promise<void> {
    if (this.#hinting) {
      this.#hintedAgain = true;
      return;
    }
    this.#hinting = true;
    try {
      do {
        this.#hintedAgain = false;
        await this.#poll();
      } while (this.#hintedAgain && !this.#closed);
    } finally {
      this.#hinting = false;
    }
  }

  async #listen(): Promise<void> {
    if (this.#attempting || this.#closed) return;
    this.#attempting = true;
    try {
      const connection = await (this.#connection as Promise<Sql>);
      await connection.unsafe(`LISTEN ${COMMIT_CHANNEL}`);
      this.#listening = true;
      this.#reported = false;
      this.#options.onListening?.();
    } catch (error) {
      this.#failed(error);
      this.#down();
      return;
    } finally {
      this.#attempting = false;
    }
    await this.#poll();
  }

  #down(): void {
    this.#options.onListenLost?.();
    this.#listening = false;
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#poll().then(() => (this.#listening ? undefined : this.#listen()));
    }, POLL_INTERVAL_MS);
    this.#timer.unref();
  }

  /**
   * Given up after twice the statement timeout, like every statement of the store: a read left hanging on a connection
   * a restart cut would otherwise hold the hints, or the polls while down, for good.
   */
  async #poll(): Promise<void> {
    const limit = 2 * this.#options.statementTimeout;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new StoreUnavailableError(`the database did not answer within ${limit} ms`)),
        limit,
      );
    });
    try {
      this.#listeners.committed(await Promise.race([this.#options.highestId(), late]));
    } catch (error) {
      this.#failed(error);
    } finally {
      clearTimeout(timer);
    }
  }

  #failed(error: unknown): void {
    if (this.#closed || this.#reported || isUnavailable(error) || error instanceof StoreUnavailableError) return;
    this.#reported = true;
    this.#options.onError(error);
  }
}
