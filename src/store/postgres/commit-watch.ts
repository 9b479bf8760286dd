import type { Sql } from 'postgres';
import { CommitListeners } from '../commit-listeners.js';
import type { CommitListener } from '../store.js';
import { COMMIT_CHANNEL } from './batch.js';
import { isUnavailable, openListener } from './driver.js';

/** While the listening connection is down, the highest id is read this often instead. */
const POLL_INTERVAL_MS = 250;
/** A payload that is an id: decimal digits, no sign, no leading zero. */
const ID_TEXT = /^[1-9][0-9]{0,15}$/;

export interface CommitWatchOptions {
  url: string;
  statementTimeout: number;
  /** The highest id handed out by any instance, read through the pool. */
  highestId(): Promise<number>;
  /** An error that is not the database being away (a missing table, a refused LISTEN). */
  onError(error: unknown): void;
}

/**
 * How an instance learns of the pets committed through any instance (PetStore.watchCommits). Every
 * batch NOTIFYs COMMIT_CHANNEL at its COMMIT (batch.ts); this LISTENs on a connection of its own.
 * While that connection is down (cut, the database restarting) the highest id is read every
 * POLL_INTERVAL_MS instead, and LISTEN is tried again each time; once it is back, the highest id is
 * read once more, since a NOTIFY sent while nobody listened is lost. The first listener starts it.
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
  #closed = false;

  constructor(options: CommitWatchOptions) {
    this.#options = options;
  }

  add(listener: CommitListener): () => void {
    const stop = this.#listeners.add(listener);
    if (this.#connection === undefined && !this.#closed) {
      this.#connection = openListener(this.#options.url, this.#options.statementTimeout, {
        onNotify: (channel, payload) => this.#notified(channel, payload),
        onClose: () => this.#down(),
      });
      void this.#listen();
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
    const connection = await this.#connection;
    await connection?.end({ timeout: 1 });
  }

  #notified(channel: string, payload: string): void {
    // Anyone may NOTIFY this channel: only an id as batch.ts writes it counts. A payload past the
    // safe integers (1e300), or one Number() reads as another id (1e3, 0x10, " 7"), would raise the
    // highest id heard above the pets to come, and no listener would hear of them again.
    if (channel !== COMMIT_CHANNEL || !ID_TEXT.test(payload)) return;
    const id = Number(payload);
    if (Number.isSafeInteger(id)) this.#listeners.committed(id);
  }

  async #listen(): Promise<void> {
    if (this.#attempting || this.#closed) return;
    this.#attempting = true;
    try {
      const connection = await (this.#connection as Promise<Sql>);
      await connection.unsafe(`LISTEN ${COMMIT_CHANNEL}`);
      this.#listening = true;
      this.#reported = false;
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
    this.#listening = false;
    if (this.#closed || this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.#poll().then(() => (this.#listening ? undefined : this.#listen()));
    }, POLL_INTERVAL_MS);
    this.#timer.unref();
  }

  async #poll(): Promise<void> {
    try {
      this.#listeners.committed(await this.#options.highestId());
    } catch (error) {
      this.#failed(error);
    }
  }

  #failed(error: unknown): void {
    if (this.#closed || this.#reported || isUnavailable(error)) return;
    this.#reported = true;
    this.#options.onError(error);
  }
}
