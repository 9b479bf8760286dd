import { PET_STATUSES, type PetStatus } from '../pet/contract.js';

/**
 * What a store tells about its durable commits as they happen, for metrics. The store defines it and
 * calls it; what listens (the service's metrics) is never imported here.
 */
export interface StoreObserver {
  /**
   * A commit made `pets` creates durable in `seconds`: the journal append and its fdatasync; on a database, the
   * statement and its COMMIT.
   */
  committed(seconds: number, pets: number): void;
  /** A commit failed (or was refused while the storage is failing): its creates were answered 503, none stored. */
  failed(): void;
}

/** The pets a store holds, per status; `none` counts the pets without one. */
export type StatusCounts = Record<PetStatus | 'none', number>;

/** Every status at 0, in the contract's order, `none` last. */
export function noStatusCounts(): StatusCounts {
  const counts = {} as StatusCounts;
  for (const status of PET_STATUSES) counts[status] = 0;
  counts.none = 0;
  return counts;
}

/** A store's load at this moment, read when metrics are scraped. */
export interface StoreStats {
  /** Creates accepted and waiting for the next commit (not counting those in a commit under way). */
  createsWaiting: number;
  /** A database store's connection pool. */
  pool?: PoolStats | undefined;
}

export interface PoolStats {
  /** Connections at most. */
  size: number;
  /** Statements in flight that hold a connection. */
  inUse: number;
  /** Statements in flight beyond the pool's size, queued behind others. */
  waiting: number;
}

/** A pool of `size` connections with `inFlight` statements sent and not yet answered: each beyond `size` waits. */
export function poolStats(size: number, inFlight: number): PoolStats {
  return { size, inUse: Math.min(inFlight, size), waiting: Math.max(0, inFlight - size) };
}

/** Seconds since `began`, a `process.hrtime.bigint()`. */
export function secondsSince(began: bigint): number {
  return Number(process.hrtime.bigint() - began) / 1e9;
}
