/**
 * What a store remembers of a create made with an `Idempotency-Key`: which API key sent it (its
 * scope, a hash: never the API key itself), the key, and when. Stored in the pet's own line.
 */
export interface IdempotencyRecord {
  scope: string;
  key: string;
  /** Milliseconds since the epoch when the pet was created. */
  at: number;
}

const KEY = /^[\x20-\x7e]{1,255}$/;
const SCOPE = /^[A-Za-z0-9_-]{1,64}$/;

/** A record as read back from a data file (parsed by the strict parser: integers are bigints). */
export function isIdempotencyRecord(value: unknown): value is { scope: string; key: string; at: bigint } {
  const record = value as Record<string, unknown> | null;
  return typeof record === 'object' && record !== null && !Array.isArray(record) && Object.keys(record).length === 3
    && typeof record['scope'] === 'string' && SCOPE.test(record['scope'])
    && typeof record['key'] === 'string' && KEY.test(record['key'])
    && typeof record['at'] === 'bigint' && record['at'] >= 0n && record['at'] <= BigInt(Number.MAX_SAFE_INTEGER);
}

/** Where a parser puts the idempotency records it meets, with the id of their pet. */
export type RecordSink = Array<{ id: number; record: IdempotencyRecord }>;

/**
 * The keys of the creates made within the window, each with the id of its pet, and the keys of the
 * creates still being committed. A key older than the window is forgotten: the same request then
 * makes a new pet. Expired keys are dropped as they are met and whenever the table is rebuilt
 * (at load and at compaction), so memory holds only the window's keys.
 */
export class IdempotencyIndex {
  readonly #windowMs: number;
  readonly #idByName = new Map<string, number>();
  readonly #recordById = new Map<number, IdempotencyRecord>();
  readonly #pending = new Set<string>();

  constructor(windowMs: number) {
    this.#windowMs = windowMs;
  }

  /** The pet id a key was used for, if that create is within the window. */
  lookup(scope: string, key: string, now: number): number | undefined {
    const id = this.#idByName.get(entryName(scope, key));
    return id === undefined ? undefined : this.#live(id, now) === undefined ? undefined : id;
  }

  /** The record a pet was created with, if it is within the window (to keep it in a snapshot). */
  recordOf(id: number, now: number): IdempotencyRecord | undefined {
    return this.#recordById.size === 0 ? undefined : this.#live(id, now);
  }

  /** Marks a key as being committed; false when a create with it is already under way. */
  begin(scope: string, key: string): boolean {
    const name = entryName(scope, key);
    if (this.#pending.has(name)) return false;
    this.#pending.add(name);
    return true;
  }

  /** The create with this key is over: stored as pet `id`, or refused (undefined: the key may be used again). */
  end(record: IdempotencyRecord, id: number | undefined): void {
    this.#pending.delete(entryName(record.scope, record.key));
    if (id !== undefined) this.restore(record, id, record.at);
  }

  /** Adds a stored record (at load); one already past the window at `now` is not kept. */
  restore(record: IdempotencyRecord, id: number, now: number): void {
    if (now - record.at >= this.#windowMs) return;
    this.#idByName.set(entryName(record.scope, record.key), id);
    this.#recordById.set(id, record);
  }

  /** Forgets every key past the window. */
  sweep(now: number): void {
    for (const id of this.#recordById.keys()) this.#live(id, now);
  }

  #live(id: number, now: number): IdempotencyRecord | undefined {
    const record = this.#recordById.get(id);
    if (record === undefined || now - record.at < this.#windowMs) return record;
    this.#recordById.delete(id);
    // The key may name a newer pet by now (restored from a later create): only this pet's mapping goes.
    const name = entryName(record.scope, record.key);
    if (this.#idByName.get(name) === id) this.#idByName.delete(name);
    return undefined;
  }
}

// Scopes are hashes and hold no newline, so a scope and a key cannot run together ambiguously.
const entryName = (scope: string, key: string): string => `${scope}\n${key}`;
