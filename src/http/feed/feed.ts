import type { Logger } from '../../lib/logger.js';
import type { ListPage, ListQuery, ListText, PetStore } from '../../store/store.js';
import { HeldLimitError, KeyHeldLimitError, revokedError } from './held-refusals.js';
import { stoppingError, type HttpError } from '../http-error.js';
import { pageText } from './page-text.js';

/** A waiting request or an open event stream: woken when pets it has not seen were committed. */
export interface Watcher {
  /** Every matching pet up to this id has been seen (answered, or found not to match). */
  readonly checked: number;
  /** Pets above `checked` were committed: read them (a watcher busy reading reads again after). */
  wake(): void;
  /** Every heartbeat interval, to streams. */
  tick?(): void;
  /**
   * End now. Without a reason the service stops: a waiting request gets its empty page, a stream ends.
   * With one (its key was revoked), a request not answered yet gets that error instead.
   */
  close(reason?: HttpError): void;
}

export interface FeedOptions {
  /** Open event streams and waiting requests at most; more are refused with 503. */
  maxHeld: number;
  /** Of those, held for one API key at most; more of that key's are refused with 429, others' are not. */
  maxHeldPerKey: number;
  /** How often a stream that sent nothing sends a heartbeat, in milliseconds. */
  heartbeatMs: number;
  /**
   * How long an event stream lasts at most, in milliseconds; then it ends, and its client resumes with Last-Event-ID.
   */
  streamLifetimeMs: number;
  /**
   * Called every KEY_CHECK_MS while anything is held: where keys are learnt of only when a request
   * presents one (the key file), a revocation then reaches the streams and waits as soon as it would
   * reach a new request, which `revoke` is told of.
   */
  checkKeys?: (() => void) | undefined;
  logger: Logger;
}

/**
 * How often, while streams or waits are held, the keyring is asked to look for revocations. It reads
 * the key file at most once a second whoever asks; asking four times as often ends a revoked key's
 * streams at most a quarter of a second after a new request with the key would have been refused.
 */
const KEY_CHECK_MS = 250;

/**
 * The one place per service where waiting requests (`wait`) and event streams are held. The store
 * tells it the highest id committed (PetStore.watchCommits); it wakes, once per turn of the event
 * loop, every watcher that has not seen that far, and watchers woken by the same commit that ask the
 * same query share one read. Nothing is queued per watcher: the store is the log each reads from.
 */
export class Feed {
  readonly #store: PetStore;
  readonly #options: FeedOptions;
  /** Every watcher held, with the id of the API key it came with (undefined: none). */
  readonly #watchers = new Map<Watcher, string | undefined>();
  /** How many each API key holds, for --max-streams-per-key and to find a revoked key's at once. */
  readonly #perKey = new Map<string, number>();
  readonly #stopWatching: (() => void) | undefined;
  /**
   * Reads in flight by query, begun since `latest` last grew: one shows that commit to every watcher
   * woken by it that asks the same. Gone once settled, so that no page is kept.
   */
  readonly #reads = new Map<string, unknown>();
  #latest = 0;
  /**
   * Revocations told of so far, and at which of them each revoked key id went (a number per key revoked while it runs).
   */
  #revocations = 0;
  readonly #revokedAt = new Map<string, number>();
  #round: NodeJS.Immediate | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  #keyCheck: NodeJS.Timeout | undefined;
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

  /** How many revocations were told of: a request notes it before its first read, for `hold`. */
  get revocations(): number {
    return this.#revocations;
  }

  /** The most it holds (--max-streams). */
  get maxHeld(): number {
    return this.#options.maxHeld;
  }

  /** The most an event stream lasts, in milliseconds. */
  get streamLifetimeMs(): number {
    return this.#options.streamLifetimeMs;
  }

  /** Open event streams and waiting requests now: read when metrics are scraped, never kept on the way. */
  held(): { streams: number; waiting: number } {
    let streams = 0;
    for (const watcher of this.#watchers.keys()) if (watcher.tick !== undefined) streams++;
    return { streams, waiting: this.#watchers.size - streams };
  }

  get logger(): Logger {
    return this.#options.logger;
  }

  /** A pet created through this service's handler: all a store without watchCommits tells of. */
  created(id: number): void {
    if (this.#stopWatching === undefined) this.#committed(id);
  }

  /**
   * Holds `watcher`, which came with the API key `keyId`, until `release`. Refused with a 429 beyond
   * the key's limit, a 503 beyond the service's, or once the service stops; with a 401 when its key
   * was revoked after `revocations` (told when its request began: a wait holds only after its first read).
   */
  hold(watcher: Watcher, keyId: string | undefined, revocations = this.#revocations): void {
    if (this.#closed) throw stoppingError();
    if (keyId !== undefined && (this.#revokedAt.get(keyId) ?? 0) > revocations) throw revokedError();
    const ofKey = keyId === undefined ? 0 : (this.#perKey.get(keyId) ?? 0);
    if (ofKey >= this.#options.maxHeldPerKey) throw new KeyHeldLimitError(this.#options.maxHeldPerKey);
    if (this.#watchers.size >= this.#options.maxHeld) throw new HeldLimitError(this.#options.maxHeld);
    this.#watchers.set(watcher, keyId);
    if (keyId !== undefined) this.#perKey.set(keyId, ofKey + 1);
    if (watcher.tick !== undefined && this.#heartbeat === undefined) {
      this.#heartbeat = setInterval(() => this.#tick(), this.#options.heartbeatMs);
      this.#heartbeat.unref();
    }
    if (this.#options.checkKeys !== undefined && this.#keyCheck === undefined) {
      this.#keyCheck = setInterval(() => this.#checkKeys(), KEY_CHECK_MS);
      this.#keyCheck.unref();
    }
  }

  release(watcher: Watcher): void {
    const keyId = this.#watchers.get(watcher);
    if (!this.#watchers.delete(watcher) || keyId === undefined) return;
    const left = (this.#perKey.get(keyId) ?? 1) - 1;
    if (left > 0) this.#perKey.set(keyId, left);
    else this.#perKey.delete(keyId);
  }

  /**
   * The API keys `keyIds` are no longer accepted: their streams end, and their waiting requests get
   * the 401 a new request with the key would. One log line per key that held any.
   */
  revoke(keyIds: readonly string[]): void {
    this.#revocations++;
    for (const keyId of keyIds) {
      this.#revokedAt.set(keyId, this.#revocations);
      if (!this.#perKey.has(keyId)) continue;
      let ended = 0;
      for (const [watcher, owner] of [...this.#watchers]) {
        if (owner !== keyId) continue;
        watcher.close(revokedError());
        ended++;
      }
      this.#options.logger.info('event streams and waiting requests of a revoked API key ended', { keyId, ended });
    }
  }

  /** Wakes the watchers behind `latest` on the next turn, after what is running now (the 201s of a commit). */
  schedule(): void {
    if (this.#round !== undefined || this.#closed) return;
    this.#round = setImmediate(() => {
      this.#round = undefined;
      for (const watcher of this.#watchers.keys()) if (watcher.checked < this.#latest) watcher.wake();
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
    clearInterval(this.#keyCheck);
    for (const watcher of [...this.#watchers.keys()]) watcher.close();
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

  #checkKeys(): void {
    if (this.#watchers.size === 0) {
      clearInterval(this.#keyCheck);
      this.#keyCheck = undefined;
      return;
    }
    this.#options.checkKeys?.();
  }

  #tick(): void {
    let streams = 0;
    for (const watcher of this.#watchers.keys()) {
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
