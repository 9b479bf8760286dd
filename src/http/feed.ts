import type { Logger } from '../lib/logger.js';
import type { ListPage, ListQuery, ListText, PetStore } from '../store/store.js';
import { HttpError, stoppingError } from './http-error.js';
import { pageText } from './page-text.js';

/** A waiting request or an open event stream: woken when pets it has not seen were committed. */
export interface Watcher {
  /** Every matching pet up to this id has been seen (answered, or found not to match). */
  readonly checked: number;
  /** Pets above `checked` were committed: read them (a watcher busy reading reads again after). */
  wake(): void;
  /** Every heartbeat interval, to streams. */
  tick?(): void;
  /** The service stops: answer or end now. */
  close(): void;
}

export interface FeedOptions {
  /** Open event streams and waiting requests at most; more are refused with 503. */
  maxHeld: number;
  /** How often a stream that sent nothing sends a heartbeat, in milliseconds. */
  heartbeatMs: number;
  logger: Logger;
}


/** The 503 of a request refused because the feed holds `--max-streams` already: a limit, which metrics count by name. */
export class HeldLimitError extends HttpError {
  constructor(maxHeld: number) {
    super(503, 'unavailable', `this server holds ${maxHeld} event streams and waiting requests, the most it keeps open; retry after Retry-After seconds`, { 'retry-after': '5' });
  }
}

/**
 * The one place per service where waiting requests (`wait`) and event streams are held. The store
 * tells it the highest id committed (PetStore.watchCommits); it wakes, once per turn of the event
 * loop, every watcher that has not seen that far, and watchers woken by the same commit that ask the
 * same query share one read. Nothing is queued per watcher: the store is the log each reads from.
 */
export class Feed {
  readonly #store: PetStore;
  readonly #options: FeedOptions;
  readonly #watchers = new Set<Watcher>();
  readonly #stopWatching: (() => void) | undefined;
  /**
   * Reads in flight by query, begun since `latest` last grew: one shows that commit to every watcher
   * woken by it that asks the same. Gone once settled, so that no page is kept.
   */
  readonly #reads = new Map<string, unknown>();
  #latest = 0;
  #round: NodeJS.Immediate | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(store: PetStore, options: FeedOptions) {
    this.#store = store;
    this.#options = options;
    this.#stopWatching = store.watchCommits?.((lastId) => this.#committed(lastId));
  }

  /** The highest id the store has told of (0 before its first commit since the start). */
  get latest(): number {
    return this.#latest;
  }

  /** The most it holds (--max-streams). */
  get maxHeld(): number {
    return this.#options.maxHeld;
  }

  /** Open event streams and waiting requests now: read when metrics are scraped, never kept on the way. */
  held(): { streams: number; waiting: number } {
    let streams = 0;
    for (const watcher of this.#watchers) if (watcher.tick !== undefined) streams++;
    return { streams, waiting: this.#watchers.size - streams };
  }

  get logger(): Logger {
    return this.#options.logger;
  }

  /** A pet created through this service's handler: all a store without watchCommits tells of. */
  created(id: number): void {
    if (this.#stopWatching === undefined) this.#committed(id);
  }

  /** Holds `watcher` until `release`; refused with a 503 beyond the limit, or once the service stops. */
  hold(watcher: Watcher): void {
    if (this.#closed) throw stoppingError();
    if (this.#watchers.size >= this.#options.maxHeld) throw new HeldLimitError(this.#options.maxHeld);
    this.#watchers.add(watcher);
    if (watcher.tick !== undefined && this.#heartbeat === undefined) {
      this.#heartbeat = setInterval(() => this.#tick(), this.#options.heartbeatMs);
      this.#heartbeat.unref();
    }
  }

  release(watcher: Watcher): void {
    this.#watchers.delete(watcher);
  }

  /** Wakes the watchers behind `latest` on the next turn, after what is running now (the 201s of a commit). */
  schedule(): void {
    if (this.#round !== undefined || this.#closed) return;
    this.#round = setImmediate(() => {
      this.#round = undefined;
      for (const watcher of this.#watchers) if (watcher.checked < this.#latest) watcher.wake();
    });
  }

  /** A page's text, as listPets answers it, shared with every watcher asking the same since the last commit. */
  pageText(query: ListQuery): Promise<ListText> {
    return this.#shared(`t${query.after}.${query.limit}.${query.status}`, () => pageText(this.#store, query));
  }

  /** A page's pets, shared in the same way. */
  pets(query: ListQuery): Promise<ListPage> {
    return this.#shared(`p${query.after}.${query.limit}.${query.status}`, () => this.#store.list(query));
  }

  /** Answers every waiting request (an empty page) and ends every stream; holds no more. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#stopWatching?.();
    clearImmediate(this.#round);
    clearInterval(this.#heartbeat);
    for (const watcher of [...this.#watchers]) watcher.close();
  }

  #committed(lastId: number): void {
    if (!(lastId > this.#latest)) return;
    this.#latest = lastId;
    this.#reads.clear();
    this.schedule();
  }

  #shared<T>(key: string, read: () => T | Promise<T>): Promise<T> {
    const running = this.#reads.get(key) as Promise<T> | undefined;
    if (running !== undefined) return running;
    const shared = Promise.resolve().then(read);
    this.#reads.set(key, shared);
    const forget = (): void => {
      if (this.#reads.get(key) === shared) this.#reads.delete(key);
    };
    shared.then(forget, forget);
    return shared;
  }

  #tick(): void {
    let streams = 0;
    for (const watcher of this.#watchers) {
      if (watcher.tick === undefined) continue;
      streams++;
      watcher.tick();
    }
    if (streams === 0) {
      clearInterval(this.#heartbeat);
      this.#heartbeat = undefined;
    }
  }
}
