import type { Cursor } from './cursor-file.js';
import type { Subscription } from './subscription-file.js';

/** Where the cursors of the subscriptions being delivered are kept: moved after each delivery. */
export interface Cursors {
  get(id: string): Cursor | undefined;
  /**
   * Stores where a subscription new to this store starts, durably: resolves once a crash can no longer lose it,
   * with false if this instance no longer delivers it (a lease lost); rejects when it cannot be stored.
   */
  start(id: string, cursor: Cursor): Promise<boolean>;
  set(id: string, cursor: Cursor): void;
  /** This instance no longer delivers `id`. */
  delete(id: string): void;
}

/**
 * Where the subscriptions an instance delivers come from: webhooks.json of its data directory, or the
 * database's table with a lease per subscription (database-source.ts).
 */
export interface SubscriptionSource {
  readonly cursors: Cursors;
  /** What this instance delivers now; undefined when nothing changed since the last call. Throws if it cannot tell. */
  read(): Promise<Subscription[] | undefined>;
  /** Stores every cursor moved so far (and gives up what it holds). */
  close(): Promise<void>;
}
