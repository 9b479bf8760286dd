import { IDEMPOTENCY_WINDOW_SECONDS } from '../../pet/contract.js';
import type { Recovered, WentBack } from './rewind.js';

export interface PostgresStoreOptions {
  /** Connections at most (default 10). */
  pool?: number;
  /** Milliseconds a statement may take on the database (default 5000); a call gives up after twice that. */
  statementTimeout?: number;
  /** Creates waiting for their commit at most; beyond, a create is refused at once (default 1000). */
  maxWaitingCreates?: number;
  /** Reads in flight at most; beyond, a read is refused at once (default 256). */
  maxReads?: number;
  /** Seconds an idempotency key is remembered after its create (default 86400). */
  idempotencyWindow?: number;
  /** Told when the database goes away and when it is back; default: silent. */
  onAvailability?: (available: boolean, error?: unknown) => void;
  /**
   * Reads from the database instead of a copy of the pets in memory (pet-copy.ts): for stores larger than an instance's
   * memory.
   */
  databaseReads?: boolean;
  /** Told once the copy is filled at start: how many pets it read, in how many seconds. */
  onFilled?: (pets: number, seconds: number) => void;
  /** Where the pets a database lost are written (`lost-pets-<time>.jsonl`, rewind.ts); default: the working dir. */
  lostPetsDirectory?: string;
  /** Told when the database went back (lost commits): creates are refused until onRecovered. */
  onWentBack?: (event: WentBack) => void;
  onRecovered?: (event: Recovered) => void;
  /**
   * Told of a failure to learn of other instances' commits, or to read the pets into the copy, that is not the database
   * being away; default: silent.
   */
  onBackgroundError?: (error: unknown) => void;
}

export const POSTGRES_DEFAULTS = {
  pool: 10,
  statementTimeout: 5000,
  maxWaitingCreates: 1000,
  maxReads: 256,
  idempotencyWindow: IDEMPOTENCY_WINDOW_SECONDS,
} as const;
