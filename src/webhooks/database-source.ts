import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Sql } from 'postgres';
import { isUnavailable } from '../store/postgres/driver.js';
import {
  type LeasedSubscription,
  leaseSubscriptions,
  moveCursor,
  releaseLeases,
} from '../store/postgres/webhook-cursors.js';
import type { Cursor } from './cursor-file.js';
import { isSubscription, type Subscription } from './subscription-file.js';
import type { Cursors, SubscriptionSource } from './subscription-source.js';

/** Seconds a lease lasts after each renewal: how long a dead instance's subscriptions wait for another. */
export const LEASE_SECONDS = 10;
// An instance that could not renew for this long stops delivering before its lease can have passed to another.
const GIVE_UP_MS = (LEASE_SECONDS - 2) * 1000;

/**
 * The subscriptions in the database that this instance holds the lease of (webhook-cursors.ts),
 * renewed at each read (every second); their cursors move in the database, and only while the lease is held.
 */
export class DatabaseSource implements SubscriptionSource {
  readonly cursors: DatabaseCursors;
  readonly #sql: Sql;
  readonly #owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  #renewed = performance.now();

  constructor(sql: Sql, onError: (error: unknown) => void) {
    this.#sql = sql;
    this.cursors = new DatabaseCursors(sql, this.#owner, onError);
  }

  async read(): Promise<Subscription[]> {
    const started = performance.now();
    let leased: LeasedSubscription[];
    try {
      leased = await leaseSubscriptions(this.#sql, this.#owner, LEASE_SECONDS);
    } catch (error) {
      if (!isUnavailable(error)) throw error;
      // Its leases may pass to another instance soon: every delivery here stops, none runs twice for long.
      if (performance.now() - this.#renewed > GIVE_UP_MS) return this.#hold([]);
      throw error;
    }
    this.#renewed = started;
    this.cursors.retry();
    return this.#hold(
      leased.flatMap(({ id, document, last, replay }) => {
        const subscription = parsed(document);
        if (!isSubscription(subscription) || subscription.id !== id) return [];
        // A lease just taken starts from the stored cursor; one held all along keeps its own, newer one.
        if (this.cursors.get(id) === undefined) this.cursors.hold(id, { last, replay: replay ?? undefined });
        return [subscription];
      }),
    );
  }

  #hold(subscriptions: Subscription[]): Subscription[] {
    this.cursors.keepOnly(new Set(subscriptions.map((s) => s.id)));
    return subscriptions;
  }

  async close(): Promise<void> {
    await this.cursors.flush();
    try {
      await releaseLeases(this.#sql, this.#owner);
    } catch (error) {
      // The leases then end by themselves, LEASE_SECONDS after the last renewal.
      if (!isUnavailable(error)) throw error;
    }
  }
}

/**
 * The cursors of the subscriptions held, written to the database one write in flight at a time,
 * each carrying every move made meanwhile (as CursorFile does); a write that finds the lease gone
 * drops the cursor here, and the next read stops its delivery.
 */
class DatabaseCursors implements Cursors {
  readonly #cursors = new Map<string, Cursor>();
  readonly #dirty = new Set<string>();
  #writing: Promise<void> | undefined;

  constructor(
    private readonly sql: Sql,
    private readonly owner: string,
    private readonly onError: (error: unknown) => void,
  ) {}

  get(id: string): Cursor | undefined {
    return this.#cursors.get(id);
  }

  hold(id: string, cursor: Cursor): void {
    this.#cursors.set(id, cursor);
  }

  /**
   * Seldom reached: a subscription a lease brings is held with the start `webhooks add` stored in the transaction that
   * added it. One whose cursor a lost lease dropped meanwhile is stored as a move is, only with the lease held.
   */
  async start(id: string, cursor: Cursor): Promise<boolean> {
    const held = await moveCursor(this.sql, this.owner, id, cursor.last, cursor.replay ?? null);
    if (held) this.#cursors.set(id, cursor);
    return held;
  }

  set(id: string, cursor: Cursor): void {
    if (!this.#cursors.has(id)) return;
    this.#cursors.set(id, cursor);
    this.#dirty.add(id);
    this.#write();
  }

  delete(id: string): void {
    this.#cursors.delete(id);
    this.#dirty.delete(id);
  }

  keepOnly(ids: ReadonlySet<string>): void {
    for (const id of this.#cursors.keys()) if (!ids.has(id)) this.delete(id);
  }

  /** Writes again what a failed write left (the database was away). */
  retry(): void {
    if (this.#dirty.size > 0) this.#write();
  }

  async flush(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  #write(): void {
    this.#writing ??= (async () => {
      try {
        while (this.#dirty.size > 0) {
          const [id] = this.#dirty;
          const cursor = id === undefined ? undefined : this.#cursors.get(id);
          this.#dirty.delete(id as string);
          if (id === undefined || cursor === undefined) continue;
          try {
            const held = await moveCursor(this.sql, this.owner, id, cursor.last, cursor.replay ?? null);
            if (!held && this.#cursors.get(id) === cursor) this.#cursors.delete(id);
          } catch (error) {
            if (!isUnavailable(error)) throw error;
            // Moved at the next renewal; a crash meanwhile only delivers its pets again.
            if (this.#cursors.has(id)) this.#dirty.add(id);
            this.onError(error);
            return;
          }
        }
      } finally {
        this.#writing = undefined;
      }
    })().catch(this.onError);
  }
}

/** The document's value; nothing when it is not JSON (a row written by hand), which is then not delivered. */
function parsed(document: string): unknown {
  try {
    return JSON.parse(document);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    return undefined;
  }
}
