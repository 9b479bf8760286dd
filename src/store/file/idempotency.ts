import { KeyedHash } from '../../lib/keyed-hash.js';

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

/** A record as read back from a data file of an earlier format (parsed by the strict parser: integers are bigints). */
export function isIdempotencyRecord(value: unknown): value is { scope: string; key: string; at: bigint } {
  const record = value as Record<string, unknown> | null;
  return (
    typeof record === 'object' &&
    record !== null &&
    !Array.isArray(record) &&
    Object.keys(record).length === 3 &&
    typeof record.scope === 'string' &&
    SCOPE.test(record.scope) &&
    typeof record.key === 'string' &&
    KEY.test(record.key) &&
    typeof record.at === 'bigint' &&
    record.at >= 0n &&
    record.at <= BigInt(Number.MAX_SAFE_INTEGER)
  );
}

/** The record a stored pet was created with, read from its line: the key's text is kept there, and only there. */
export type StoredRecordOf = (id: number) => IdempotencyRecord | undefined;

const INITIAL_ENTRIES = 64;
const EMPTY = 0;

/**
 * The keys of the creates made within the window, each with the id of its pet, in 32 bytes a key
 * besides the key's own bytes, which stay in the pet's line (the record holding the key is read
 * back from there when a lookup needs it): entries in typed arrays in the order they were made, and
 * an open-addressed table of their hashes. The hash is keyed with a secret of this index's own
 * (lib/keyed-hash.ts), as clients choose the keys: no set of keys a client can choose costs more
 * than as many random ones. A key older than the window is forgotten: the same request then makes
 * a new pet. Old entries are dropped from the front as the window moves.
 *
 * At most `maxPerScope` keys are remembered per API key (scope): past that, a new one is refused
 * until the oldest leaves the window (`retryAfter`), rather than a key being forgotten early, which
 * would make a retry with it a second pet.
 */
export class IdempotencyIndex {
  readonly #windowMs: number;
  readonly #maxPerScope: number;
  readonly #recordOf: StoredRecordOf;
  readonly #hash: KeyedHash;
  readonly #pending = new Set<string>();
  readonly #scopes = new Map<string, number>();
  /** Per API key: keys remembered, creates with a key under way, and where its oldest entry was last found. */
  readonly #perScope: Array<{ count: number; pending: number; oldest: number }> = [];
  // Entries [#head, #length): pet id, creation time, scope number, hash of scope and key.
  #ids = new Float64Array(INITIAL_ENTRIES);
  #ats = new Float64Array(INITIAL_ENTRIES);
  #scopeOf = new Uint32Array(INITIAL_ENTRIES);
  #hashes = new Int32Array(INITIAL_ENTRIES);
  #head = 0;
  #length = 0;
  /** Entry number + 1 by hash, linear probing; a slot of an entry before #head is free for a new one. */
  #table = new Int32Array(4 * INITIAL_ENTRIES);

  /** `hash`: the keyed hash of the table, with a secret of its own unless one is given. */
  constructor(
    windowMs: number,
    recordOf: StoredRecordOf,
    maxPerScope = Number.POSITIVE_INFINITY,
    hash = new KeyedHash(),
  ) {
    this.#windowMs = windowMs;
    this.#hash = hash;
    this.#recordOf = recordOf;
    this.#maxPerScope = maxPerScope;
  }

  /** Keys remembered per API key at most. */
  get maxPerScope(): number {
    return this.#maxPerScope;
  }

  /** How many keys are remembered, and so how many entries the typed arrays hold. */
  get size(): number {
    return this.#length - this.#head;
  }

  /** The pet id a key was used for, if that create is within the window. */
  lookup(scope: string, key: string, now: number): number | undefined {
    const entry = this.#find(scope, key, this.#hashOf(scope, key));
    return entry === -1 || now - (this.#ats[entry] as number) >= this.#windowMs ? undefined : this.#ids[entry];
  }

  /** Whether the pet's record is within the window, so that a snapshot keeps it in the pet's line. */
  isLive(id: number, now: number): boolean {
    let low = this.#head;
    let high = this.#length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.#ids[mid] as number) < id) low = mid + 1;
      else high = mid;
    }
    return low < this.#length && this.#ids[low] === id && now - (this.#ats[low] as number) < this.#windowMs;
  }

  /**
   * Marks a key as being committed: 'taken' when a create with it is already under way, or the seconds
   * to wait when its API key has as many keys remembered as it may.
   */
  begin(scope: string, key: string, now: number): 'begun' | 'taken' | { retryAfter: number } {
    const name = nameOf(scope, key);
    if (this.#pending.has(name)) return 'taken';
    const counts = this.#perScope[this.#scopeNumber(scope)] as { pending: number };
    const full = this.#fullFor(scope, now);
    if (full !== undefined) return { retryAfter: full };
    this.#pending.add(name);
    counts.pending++;
    return 'begun';
  }

  /** The create with this key is over: stored as pet `id`, or refused (undefined: the key may be used again). */
  end(record: IdempotencyRecord, id: number | undefined): void {
    if (this.#pending.delete(nameOf(record.scope, record.key)))
      (this.#perScope[this.#scopeNumber(record.scope)] as { pending: number }).pending--;
    if (id !== undefined) this.restore(record, id, record.at);
  }

  /** Adds a stored record (at load, in id order); one already past the window at `now` is not kept. */
  restore(record: IdempotencyRecord, id: number, now: number): void {
    if (now - record.at >= this.#windowMs) return;
    if (this.#length === this.#ids.length) this.#makeRoom();
    const entry = this.#length++;
    const hash = this.#hashOf(record.scope, record.key);
    this.#ids[entry] = id;
    this.#ats[entry] = record.at;
    this.#scopeOf[entry] = this.#scopeNumber(record.scope);
    this.#hashes[entry] = hash;
    (this.#perScope[this.#scopeOf[entry] as number] as { count: number }).count++;
    // The same key may be in the table already, from a create whose window has ended: this one replaces it.
    const slot = this.#slotFor(record.scope, record.key, hash);
    this.#table[slot] = entry + 1;
  }

  /** Forgets the keys past the window, from the oldest on. */
  sweep(now: number): void {
    while (this.#head < this.#length && now - (this.#ats[this.#head] as number) >= this.#windowMs) {
      (this.#perScope[this.#scopeOf[this.#head] as number] as { count: number }).count--;
      this.#head++;
    }
  }

  /**
   * Seconds until `scope` may have another key remembered, or undefined when it may now. Creates with
   * a key still being committed count too, or many at once would all be let through.
   */
  #fullFor(scope: string, now: number): number | undefined {
    const number = this.#scopeNumber(scope);
    const counts = this.#perScope[number] as { count: number; pending: number; oldest: number };
    if (counts.count + counts.pending < this.#maxPerScope) return undefined;
    this.sweep(now);
    if (counts.count + counts.pending < this.#maxPerScope) return undefined;
    // Held by creates under way alone: they end within moments, stored or refused.
    if (counts.count < this.#maxPerScope) return 1;
    // Its oldest entry: where the last search ended, or further on; it only ever moves forward.
    let entry = Math.max(counts.oldest, this.#head);
    while (this.#scopeOf[entry] !== number) entry++;
    counts.oldest = entry;
    return Math.max(1, Math.ceil(((this.#ats[entry] as number) + this.#windowMs - now) / 1000));
  }

  /** The live entry of this key, or -1. */
  #find(scope: string, key: string, hash: number): number {
    const slot = this.#table[this.#slotFor(scope, key, hash)] as number;
    return slot === EMPTY || slot - 1 < this.#head ? -1 : slot - 1;
  }

  /**
   * The slot of this key's entry, or the slot a new entry of it goes to: the first free one on its
   * probe path when the key is not there. An entry's key is compared only when the hashes match, by
   * reading its record back from the pet's line.
   */
  #slotFor(scope: string, key: string, hash: number): number {
    const mask = this.#table.length - 1;
    let free = -1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const value = this.#table[slot] as number;
      if (value === EMPTY) return free === -1 ? slot : free;
      const entry = value - 1;
      if (entry < this.#head) {
        if (free === -1) free = slot;
      } else if (this.#hashes[entry] === hash && this.#scopeOf[entry] === this.#scopes.get(scope)) {
        const stored = this.#recordOf(this.#ids[entry] as number);
        if (stored !== undefined && stored.key === key) return slot;
      }
    }
  }

  /** The keyed hash of the scope, a separator no scope holds, and the key. */
  #hashOf(scope: string, key: string): number {
    return this.#hash.hash(nameOf(scope, key));
  }

  #scopeNumber(scope: string): number {
    let number = this.#scopes.get(scope);
    if (number === undefined) {
      number = this.#scopes.size;
      this.#scopes.set(scope, number);
      this.#perScope.push({ count: 0, pending: 0, oldest: 0 });
    }
    return number;
  }

  /**
   * Drops the forgotten entries from the front, grows the arrays if they are still more than half full, and rebuilds
   * the table.
   */
  #makeRoom(): void {
    const old = this.#table;
    const oldHead = this.#head;
    const live = this.#length - this.#head;
    const capacity = live * 2 > this.#ids.length ? this.#ids.length * 2 : this.#ids.length;
    const move = <T extends Float64Array | Uint32Array | Int32Array>(from: T, Type: new (n: number) => T): T => {
      const to = new Type(capacity);
      to.set(from.subarray(this.#head, this.#length));
      return to;
    };
    this.#ids = move(this.#ids, Float64Array);
    this.#ats = move(this.#ats, Float64Array);
    this.#scopeOf = move(this.#scopeOf, Uint32Array);
    this.#hashes = move(this.#hashes, Int32Array);
    for (const counts of this.#perScope) counts.oldest = Math.max(0, counts.oldest - this.#head);
    this.#head = 0;
    this.#length = live;
    // Load at most a half, dead slots included, as no more than `capacity` entries go in before the
    // next rebuild. Only the entries the old table holds go back, each key's newest: no two are of one
    // key, so none is compared with another or read back from its line.
    this.#table = new Int32Array(2 * capacity);
    const mask = this.#table.length - 1;
    for (const value of old) {
      const entry = value - 1 - oldHead;
      if (value === EMPTY || entry < 0) continue;
      let slot = (this.#hashes[entry] as number) & mask;
      while (this.#table[slot] !== EMPTY) slot = (slot + 1) & mask;
      this.#table[slot] = entry + 1;
    }
  }
}

// Scopes are hashes and hold no newline, so a scope and a key cannot run together ambiguously.
const nameOf = (scope: string, key: string): string => `${scope}\n${key}`;
