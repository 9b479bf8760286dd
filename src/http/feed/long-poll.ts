import type { ServerResponse } from 'node:http';
import type { Feed, Watcher } from './feed.js';
import type { HttpError } from '../http-error.js';
import { StoreUnavailableError, type ListQuery, type ListText } from '../../store/store.js';

/** A read the database could not answer is tried again after this long, while the wait lasts. */
const RETRY_MS = 1000;

/**
 * `wait`: the page `query` was empty (`empty`, read when the feed had seen up to `seen`); resolves
 * to the first page that is not, once a matching pet is committed, or to `empty` after `ms`, when the
 * client goes, or when the service stops; rejected with a 401 when its key is revoked, also since
 * `revocations` (Feed.revocations when its first read began). Refused with a 429 when that key holds
 * all it may, a 503 when the feed does.
 */
export function waitForPets(
  feed: Feed,
  query: ListQuery,
  seen: number,
  ms: number,
  res: ServerResponse,
  empty: ListText,
  key: { id: string | undefined; revocations: number },
): Promise<ListText> {
  return new Promise((resolve, reject) => {
    const waiter = new Waiter(feed, query, Math.max(seen, query.after), resolve, reject, empty);
    feed.hold(waiter, key.id, key.revocations);
    waiter.start(ms, res);
  });
}

class Waiter implements Watcher {
  readonly #feed: Feed;
  readonly #query: ListQuery;
  readonly #resolve: (page: ListText) => void;
  readonly #reject: (error: unknown) => void;
  readonly #empty: ListText;
  #checked: number;
  #busy = false;
  #done = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    feed: Feed,
    query: ListQuery,
    checked: number,
    resolve: (page: ListText) => void,
    reject: (error: unknown) => void,
    empty: ListText,
  ) {
    this.#feed = feed;
    this.#query = query;
    this.#checked = checked;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#empty = empty;
  }

  get checked(): number {
    return this.#checked;
  }

  start(ms: number, res: ServerResponse): void {
    // A client that went while the first page was read (a database read takes a while) has closed
    // already, and 'close' will not come again: it must not keep its place for the whole wait.
    if (res.destroyed) return this.#answer(this.#empty);
    this.#timer = setTimeout(() => this.#answer(this.#empty), ms);
    res.once('close', () => this.#answer(this.#empty));
    // A commit told between the first read and now is already behind: look again.
    if (this.#feed.latest > this.#checked) this.#feed.schedule();
  }

  wake(): void {
    if (this.#busy || this.#done) return;
    this.#busy = true;
    const at = this.#feed.latest;
    this.#feed.pageText(this.#query).then(
      (page) => {
        this.#busy = false;
        if (page.lastId !== undefined) return this.#answer(page);
        this.#checked = Math.max(this.#checked, at);
        if (this.#feed.latest > this.#checked) this.wake();
      },
      (error: unknown) => {
        this.#busy = false;
        if (!(error instanceof StoreUnavailableError)) return this.#fail(error);
        setTimeout(() => this.wake(), RETRY_MS).unref();
      },
    );
  }

  close(reason?: HttpError): void {
    if (reason === undefined) this.#answer(this.#empty);
    else this.#fail(reason);
  }

  #answer(page: ListText): void {
    if (this.#end()) this.#resolve(page);
  }

  #fail(error: unknown): void {
    if (this.#end()) this.#reject(error);
  }

  #end(): boolean {
    if (this.#done) return false;
    this.#done = true;
    clearTimeout(this.#timer);
    this.#feed.release(this);
    return true;
  }
}
