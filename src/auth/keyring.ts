import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../lib/sha256.js';
import { monotonicMs } from '../lib/monotonic.js';
import { mergeDuplicates, stricterKey, type KeyEntry, type KeyPlace } from './key-duplicates.js';
import { keyFileVersion, readKeyFile } from './key-file.js';
import { ALL_SCOPES, scopeBits, type ScopeBits } from './key-scopes.js';
import { checkQuota, type QuotaPolicy } from './quota.js';

/** The form of a bearer token (RFC 6750 b64token); a configured key must have it to be usable. */
export const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

// How often, at most, the key file is checked for changes: a revoked key stops working within this
// time, without a restart and without a timer that wakes an idle server. Measured on the monotonic
// clock: a wall clock set back must not put the next check off by as much.
const RELOAD_INTERVAL_MS = 1000;

/** A key kept in the key file or the database: its id, its SHA-256 digest in hex, what it may do. */
export interface KeyRecordDigest {
  id: string;
  sha256: string;
  /** Scope names; absent (or a database NULL) for a key that holds every scope. */
  scopes?: readonly string[] | null | undefined;
  /** Its own quota instead of the server's. */
  rateLimit?: QuotaPolicy | undefined;
}

/** An accepted key as a request needs it, resolved when the keys are read, not per request. */
export interface AcceptedKey {
  /** Its id in the key file or the database; `env-1`, `env-2`, … for keys given directly, in their order. */
  readonly id: string;
  /**
   * Its SHA-256 digest in base64url, what the key file keeps of it anyway. Things scoped to one API key
   * are stored under a name derived from it with scrypt (auth/scope.ts), never under the identity itself.
   */
  readonly identity: string;
  readonly scopes: ScopeBits;
  /** Its own quota, or undefined for the server's. */
  readonly quota: QuotaPolicy | undefined;
}

type Entry = KeyEntry<AcceptedKey>;

export interface KeyringOptions {
  /**
   * Keys given directly (PETSTORE_API_KEYS or an embedder's options), each with every scope, or only
   * those after a ':' (see parseGivenKey); only their hashes are kept.
   */
  keys?: readonly string[];
  /** A key file to read and to follow as it changes (`keys create`, `keys revoke`). */
  keyFile?: string | undefined;
  onReloadError?: (error: unknown) => void;
  /**
   * Called with the ids of the keys that came and went when the key file or the database keys change (not at the first
   * read).
   */
  onChange?: (added: readonly string[], removed: readonly string[]) => void;
  /**
   * Called when a change of the key file or the database keys brings a key that is already there:
   * the stricter entry is kept (see stricterKey); at start such a key is thrown instead. Also when a
   * key given directly is withdrawn because its copy in the file or the database was revoked.
   */
  onDuplicate?: (message: string, fields: Record<string, string>) => void;
}

/** The accepted API keys, held only as SHA-256 digests and compared in constant time. */
export class Keyring {
  readonly #fixed: Entry[];
  readonly #keyFile: string | undefined;
  readonly #onReloadError: (error: unknown) => void;
  readonly #onChange: (added: readonly string[], removed: readonly string[]) => void;
  readonly #onDuplicate: NonNullable<KeyringOptions['onDuplicate']>;
  #fromFile: Entry[] = [];
  #shared: Entry[] = [];
  // Every key once, a key found twice merged into its stricter entry: what requests are matched with.
  #entries: Entry[] = [];
  // Keys given directly that are also in the file or the database (digest in hex, their entry), and
  // those withdrawn because that copy was revoked: a revocation must not leave the key working.
  #givenTwice = new Map<string, Entry>();
  readonly #withdrawn = new Set<string>();
  // The ids of the keys last read from the file and from the database; undefined before the first read.
  #fileIds: ReadonlySet<string> | undefined;
  #sharedIds: ReadonlySet<string> | undefined;
  readonly #removalListeners: Array<(removed: readonly string[]) => void> = [];
  #fileVersion = '';
  #checkedAt = -Infinity;
  #generation = 0;

  constructor(options: KeyringOptions) {
    this.#fixed = (options.keys ?? []).map((text, i) => {
      const { key, scopes } = parseGivenKey(text);
      const hash = sha256(key);
      return {
        digest: hash,
        key: { id: `env-${i + 1}`, identity: hash.toString('base64url'), scopes, quota: undefined },
        place: 'given' as const,
      };
    });
    this.#keyFile = options.keyFile;
    this.#onReloadError = options.onReloadError ?? (() => {});
    this.#onChange = options.onChange ?? (() => {});
    this.#onDuplicate = options.onDuplicate ?? (() => {});
    this.#resolve(true);
    this.#reload(monotonicMs(), true);
  }

  /**
   * Whether `key` is one of the accepted keys. The presented key is hashed, and the digest compared
   * with every stored digest without stopping early, so the time taken says nothing about the keys.
   */
  accepts(key: string, now = monotonicMs()): boolean {
    return this.identify(key, now) !== undefined;
  }

  /**
   * The accepted key `key` is, or undefined. A key that is in two places (see onDuplicate) is one
   * entry, the stricter.
   */
  identify(key: string, now = monotonicMs()): AcceptedKey | undefined {
    this.#reload(now, false);
    return find(this.#entries, sha256(key));
  }

  /**
   * Changes each time the accepted keys are made anew (a key file or database read): a key identified
   * under one generation may be used again without hashing only while it lasts (remembered-key.ts).
   */
  get generation(): number {
    return this.#generation;
  }

  /** Reads the key file again if it changed, as a request would, for those who hold on to a key past its request. */
  refresh(now = monotonicMs()): void {
    this.#reload(now, false);
  }

  /** Calls `listener` with the ids of the keys that went, each time some go (after `onChange`). */
  onRemoved(listener: (removed: readonly string[]) => void): void {
    this.#removalListeners.push(listener);
  }

  /**
   * Replaces the keys kept elsewhere (a database); see KeyPoller. A record that cannot be used (an
   * unknown scope) is thrown, and the keys in force stay; so is a key found twice at the first read.
   */
  setSharedKeys(keys: readonly KeyRecordDigest[]): void {
    const before = this.#shared;
    this.#shared = keys.map((record) => entry(record, 'database'));
    try {
      this.#resolve(this.#sharedIds === undefined);
    } catch (error) {
      this.#shared = before;
      throw error;
    }
    this.#sharedIds = this.#report(this.#sharedIds, keys);
  }

  #reload(now: number, strict: boolean): void {
    if (this.#keyFile === undefined || now - this.#checkedAt < RELOAD_INTERVAL_MS) return;
    this.#checkedAt = now;
    try {
      const version = keyFileVersion(this.#keyFile);
      if (version === this.#fileVersion) return;
      const keys = readKeyFile(this.#keyFile) ?? [];
      this.#fromFile = keys.map((record) => entry(record, 'file'));
      this.#resolve(strict);
      this.#fileVersion = version;
      this.#fileIds = this.#report(this.#fileIds, keys);
    } catch (error) {
      // At start a broken key file is fatal; later the last good keys stay in force and it is reported.
      if (strict) throw error;
      this.#onReloadError(error);
    }
  }

  /**
   * Makes #entries from the keys of every place. A key given directly whose copy in the file or the
   * database is gone was revoked there: it is withdrawn here too until a restart (which then finds it
   * given directly only). At start (`strict`) a key found twice is thrown.
   */
  #resolve(strict: boolean): void {
    const elsewhere = new Set([...this.#fromFile, ...this.#shared].map((e) => e.digest.toString('hex')));
    for (const [hex, given] of this.#givenTwice) {
      if (elsewhere.has(hex)) continue;
      this.#withdrawn.add(hex);
      this.#onDuplicate('API key given directly withdrawn: its copy was revoked', {
        keyId: given.key.id,
        result: `${this.#describe(given)} is refused until a restart; remove it there too`,
      });
    }
    const givenTwice = new Map<string, Entry>();
    const given = this.#fixed.filter((e) => !this.#withdrawn.has(e.digest.toString('hex')));
    this.#entries = mergeDuplicates(
      [...given, ...this.#fromFile, ...this.#shared],
      strict,
      (e) => this.#describe(e),
      stricterKey,
      (first, again) => {
        const original = this.#fixed.find((e) => e.digest.equals(first.digest));
        if (original !== undefined && again.place !== 'given') givenTwice.set(again.digest.toString('hex'), original);
        this.#onDuplicate('API key given twice; the stricter entry is in force', {
          keyId: again.key.id,
          alsoKeyId: first.key.id,
          places: `${this.#describe(first)}; ${this.#describe(again)}`,
          result: 'the scopes both hold, the lower quota; a revocation of either ends it; remove one of the two',
        });
      },
    );
    this.#givenTwice = givenTwice;
    this.#generation++;
  }

  #describe({ key, place }: Entry): string {
    if (place === 'given')
      return `${key.id} (key ${key.id.slice('env-'.length)} of PETSTORE_API_KEYS, or of createPetstore's keys)`;
    return place === 'file' ? `${key.id} in ${this.#keyFile ?? 'the key file'}` : `${key.id} in the database`;
  }

  /** Reports which ids came and went since `before` (nothing at the first read); returns the ids now. */
  #report(before: ReadonlySet<string> | undefined, keys: readonly KeyRecordDigest[]): ReadonlySet<string> {
    const now = new Set(keys.map((k) => k.id));
    if (before !== undefined) {
      const added = [...now].filter((id) => !before.has(id));
      const removed = [...before].filter((id) => !now.has(id));
      if (added.length > 0 || removed.length > 0) this.#onChange(added, removed);
      if (removed.length > 0) for (const listener of this.#removalListeners) listener(removed);
    }
    return now;
  }
}

/**
 * Compares the presented digest with every entry without stopping early, so the time taken says
 * nothing about the keys; returns the entry that matches (each key is there once).
 */
function find(entries: readonly Entry[], presented: Buffer): AcceptedKey | undefined {
  let found: AcceptedKey | undefined;
  for (const stored of entries)
    if (timingSafeEqual(stored.digest, presented) && found === undefined) found = stored.key;
  return found;
}

function entry(record: KeyRecordDigest, place: KeyPlace): Entry {
  const sha256 = Buffer.from(record.sha256, 'hex');
  const quota = record.rateLimit === undefined ? undefined : checkQuota(record.rateLimit);
  return {
    digest: sha256,
    key: { id: record.id, identity: sha256.toString('base64url'), scopes: scopeBits(record.scopes), quota },
    place,
  };
}

/**
 * A key given directly (PETSTORE_API_KEYS, an embedder's `keys`): the key alone holds every scope;
 * `key:pets:read` only the scopes after the first ':', joined by '+' when there are several. A bearer
 * token never contains ':' (RFC 6750 b64token), so the split cannot cut a key in two. Throws a
 * TypeError saying what is wrong.
 */
export function parseGivenKey(text: string): { key: string; scopes: ScopeBits } {
  const colon = text.indexOf(':');
  const key = colon === -1 ? text : text.slice(0, colon);
  if (!BEARER_TOKEN.test(key))
    throw new TypeError('an API key must be a bearer token: letters, digits and - . _ ~ + / only, = at the end');
  return { key, scopes: colon === -1 ? ALL_SCOPES : scopeBits(text.slice(colon + 1).split('+')) };
}
