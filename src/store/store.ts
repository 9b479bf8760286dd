import type { PetStatus } from '../pet/contract.js';
import type { NewPet, Pet } from '../pet/pet.js';

export interface ListQuery {
  /** Exclusive cursor: only pets with a larger id. 0 lists from the start. */
  after: number;
  limit: number;
  status?: PetStatus | undefined;
}

export interface ListPage {
  /** At most `limit` pets, ascending by id. */
  pets: readonly Pet[];
  /** Whether more pets match after the last one returned. */
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
  create(pet: NewPet): Promise<Pet>;
  /** Open and able to accept writes (for `/readyz`). */
  readonly ready: boolean;
  /** Finishes pending writes, leaves the data durable and releases it. */
  close(): Promise<void>;
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
