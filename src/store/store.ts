import type { PetStatus } from '../pet/contract.js';
import type { NewPet, Pet } from '../pet/pet.js';
import type { StatusCounts, StoreObserver, StoreStats } from './observer.js';

export type { PoolStats, StatusCounts, StoreObserver, StoreStats } from './observer.js';

export interface ListQuery {
  /** Exclusive cursor: only pets with a larger id. 0 lists from the start. */
  after: number;
  limit: number;
  status?: PetStatus | undefined;
}

/** A pet's JSON text (`petJson`), or that text's UTF-8 bytes. */
export type PetText = string | Uint8Array;

export interface ListPage {
  /** At most `limit` pets, ascending by id. */
  pets: readonly Pet[];
  /** Whether more pets match after the last one returned. */
  more: boolean;
}

/**
 * A page as JSON text, or that text's UTF-8 bytes: what `petsJson` of the page's pets would be; and
 * the last id for the cursor.
 */
export interface ListText {
  json: PetText;
  lastId: number | undefined;
  more: boolean;
}

/**
 * What the HTTP layer needs from storage. The file store implements it; an embedder may supply
 * another (an in-memory one, a database). Reads may answer synchronously or with a promise.
 *
 * Contract: ids are assigned by the store, ascending, never reused, and safe integers; `create`
 * resolves only once the pet is durable, and rejects with a StoreUnavailableError when it cannot be
 * made so (the client then gets a 503). A read may reject with a StoreUnavailableError too (also a 503).
 */
export interface PetStore {
  list(query: ListQuery): ListPage | Promise<ListPage>;
  get(id: number): Pet | undefined | Promise<Pet | undefined>;
  /**
   * Optional fast paths: a page, or one pet, as the JSON text the API answers with (exactly `petsJson`
   * and `petJson` of what `list` and `get` return). A store that keeps pets as text saves the
   * formatting; without them the HTTP layer formats what `list` and `get` return. The text may be
   * given as its UTF-8 bytes, which are sent as they are and must not change afterwards.
   */
  listText?(query: ListQuery): ListText | Promise<ListText>;
  getText?(id: number): PetText | undefined | Promise<PetText | undefined>;
  create(pet: NewPet): Promise<Pet>;
  /**
   * Optional: `create` once per idempotency key and API key within the store's window. A repeat with
   * the same pet resolves to the first pet with `replayed: true` and stores nothing; with another pet
   * it rejects with IdempotencyKeyReusedError; while the first is being committed, with
   * RequestInProgressError. The key is stored with the pet, under the same fsync. Without this
   * method a request with an Idempotency-Key is refused (400).
   */
  createOnce?(pet: NewPet, key: IdempotencyKey): Promise<{ pet: Pet; replayed: boolean }>;
  /**
   * Optional: calls `listener` when pets were committed (by this store, or by any instance sharing its
   * database) with the highest id committed so far, once those pets can be read and, for this store's
   * own creates, after their promises resolved. Never called for reads. The id only grows from call to
   * call; pets must become readable in id order (a lower id may be missing for good, never arrive
   * later), so that a reader of `after` skips none. The listener must not throw. Returns the function
   * that stops the calls. Without this method, waiting requests and event streams learn only of the
   * pets created through the service's own handler.
   */
  watchCommits?(listener: CommitListener): () => void;
  /** Open and able to accept writes (for `/readyz`). */
  readonly ready: boolean;
  /**
   * Optional, for metrics, each read when they are scraped: the pets per status now (a database
   * counts them; it may reject as a read does), and the store's load. Without them, those metrics are left out.
   */
  countByStatus?(): StatusCounts | Promise<StatusCounts>;
  stats?(): StoreStats;
  /** Optional, for metrics: from now on, tell `observer` of every commit (it replaces any earlier observer). */
  observe?(observer: StoreObserver): void;
  /** Finishes pending writes, leaves the data durable and releases it. */
  close(): Promise<void>;
}

/** Told the highest id committed so far (PetStore.watchCommits). */
export type CommitListener = (lastId: number) => void;

/** An idempotency key as a create presents it: the API key's identity (`scope`) and the key. */
export interface IdempotencyKey {
  scope: string;
  key: string;
}

/** The idempotency key was already used, within its window, for a different pet (422). */
export class IdempotencyKeyReusedError extends Error {
  constructor() {
    super('this Idempotency-Key was already used for a different pet; use a new key for a new pet');
    this.name = 'IdempotencyKeyReusedError';
  }
}

/**
 * The API key has as many idempotency keys remembered as the store keeps for one (429): a new key is
 * taken again once the oldest leaves the window, in `retryAfter` seconds.
 */
export class IdempotencyKeyLimitError extends Error {
  readonly retryAfter: number;

  constructor(limit: number, retryAfter: number) {
    super(
      `this API key has ${limit} Idempotency-Keys remembered, the most this server keeps for one API key within its ` +
        `window; retry after ${retryAfter} s, or create without an Idempotency-Key`,
    );
    this.name = 'IdempotencyKeyLimitError';
    this.retryAfter = retryAfter;
  }
}

/** A create with the same idempotency key is still being committed (409). */
export class RequestInProgressError extends Error {
  constructor() {
    super('a request with this Idempotency-Key is still being processed; retry it shortly');
    this.name = 'RequestInProgressError';
  }
}

/**
 * The store cannot accept or keep a write right now (disk full, I/O error, closing), or, for a
 * remote store, cannot answer a read (the database is unreachable or overloaded). `operation` says
 * which, so that the client is told whether a pet was not stored or only not read.
 */
export class StoreUnavailableError extends Error {
  readonly operation: 'read' | 'write';

  constructor(message: string, options?: ErrorOptions & { operation?: 'read' | 'write' }) {
    super(message, options);
    this.name = 'StoreUnavailableError';
    this.operation = options?.operation ?? 'write';
  }
}

/** The data on disk cannot be used (corrupt, unreadable, locked); the server must not start on it. */
export class StoreOpenError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StoreOpenError';
  }
}
