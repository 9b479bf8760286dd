import { hash, timingSafeEqual } from 'node:crypto';
import type { Logger } from '../lib/logger.js';
import { keyFileVersion, readKeyFile } from './key-file.js';

/** The form of a bearer token (RFC 6750 b64token); a configured key must have it to be usable. */
export const BEARER_TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

// How often, at most, the key file is checked for changes: a revoked key stops working within this
// time, without a restart and without a timer that wakes an idle server.
const RELOAD_INTERVAL_MS = 1000;

/** A key kept in the key file or the database: its id and its SHA-256 digest in hex. */
export interface KeyRecordDigest {
  id: string;
  sha256: string;
}

export interface KeyringOptions {
  /** Keys given directly (PETSTORE_API_KEYS or an embedder's options); only their hashes are kept. */
  keys?: readonly string[];
  /** A key file to read and to follow as it changes (`keys create`, `keys revoke`). */
  keyFile?: string | undefined;
  onReloadError?: (error: unknown) => void;
  /** Called with the ids of the keys that came and went when the key file or the database keys change (not at the first read). */
  onChange?: (added: readonly string[], removed: readonly string[]) => void;
}

/** The accepted API keys, held only as SHA-256 digests and compared in constant time. */
export class Keyring {
  readonly #fixed: Buffer[];
  readonly #keyFile: string | undefined;
  readonly #onReloadError: (error: unknown) => void;
  readonly #onChange: (added: readonly string[], removed: readonly string[]) => void;
  #fromFile: Buffer[] = [];
  #shared: Buffer[] = [];
  // The ids of the keys last read from the file and from the database; undefined before the first read.
  #fileIds: ReadonlySet<string> | undefined;
  #sharedIds: ReadonlySet<string> | undefined;
  #fileVersion = '';
  #checkedAt = 0;

  constructor(options: KeyringOptions) {
    for (const key of options.keys ?? []) {
      if (!BEARER_TOKEN.test(key)) throw new TypeError('an API key must be a bearer token: letters, digits and - . _ ~ + / only, = at the end');
    }
    this.#fixed = (options.keys ?? []).map(digest);
    this.#keyFile = options.keyFile;
    this.#onReloadError = options.onReloadError ?? (() => {});
    this.#onChange = options.onChange ?? (() => {});
    this.#reload(Date.now(), true);
  }

  /**
   * Whether `key` is one of the accepted keys. The presented key is hashed, and the digest compared
   * with every stored digest without stopping early, so the time taken says nothing about the keys.
   */
  accepts(key: string, now = Date.now()): boolean {
    return this.identify(key, now) !== undefined;
  }

  /**
   * The accepted key's identity, or undefined: its SHA-256 digest in base64url, what the key file
   * keeps of it anyway. Things scoped to one API key are stored under a name derived from it with
   * scrypt (auth/scope.ts), never under the identity itself.
   */
  identify(key: string, now = Date.now()): string | undefined {
    this.#reload(now, false);
    const presented = digest(key);
    let found = false;
    for (const stored of this.#fixed) found = timingSafeEqual(stored, presented) || found;
    for (const stored of this.#fromFile) found = timingSafeEqual(stored, presented) || found;
    for (const stored of this.#shared) found = timingSafeEqual(stored, presented) || found;
    return found ? presented.toString('base64url') : undefined;
  }

  /** Replaces the keys kept elsewhere (a database); see KeyPoller. */
  setSharedKeys(keys: readonly KeyRecordDigest[]): void {
    this.#shared = keys.map((k) => Buffer.from(k.sha256, 'hex'));
    this.#sharedIds = this.#report(this.#sharedIds, keys);
  }

  #reload(now: number, strict: boolean): void {
    if (this.#keyFile === undefined || now - this.#checkedAt < RELOAD_INTERVAL_MS) return;
    this.#checkedAt = now;
    try {
      const version = keyFileVersion(this.#keyFile);
      if (version === this.#fileVersion) return;
      const keys = readKeyFile(this.#keyFile) ?? [];
      this.#fromFile = keys.map((k) => Buffer.from(k.sha256, 'hex'));
      this.#fileVersion = version;
      this.#fileIds = this.#report(this.#fileIds, keys);
    } catch (error) {
      // At start a broken key file is fatal; later the last good keys stay in force and it is reported.
      if (strict) throw error;
      this.#onReloadError(error);
    }
  }

  /** Reports which ids came and went since `before` (nothing at the first read); returns the ids now. */
  #report(before: ReadonlySet<string> | undefined, keys: readonly KeyRecordDigest[]): ReadonlySet<string> {
    const now = new Set(keys.map((k) => k.id));
    if (before !== undefined) {
      const added = [...now].filter((id) => !before.has(id));
      const removed = [...before].filter((id) => !now.has(id));
      if (added.length > 0 || removed.length > 0) this.#onChange(added, removed);
    }
    return now;
  }
}

/** A Keyring's `onChange` that logs one line per key that came or went: its id, never the key. */
export function logKeyChanges(logger: Logger): NonNullable<KeyringOptions['onChange']> {
  return (added, removed) => {
    for (const id of added) logger.info('API key added', { keyId: id });
    for (const id of removed) logger.info('API key revoked', { keyId: id });
  };
}

function digest(key: string): Buffer {
  // One-shot hashing (Node 20.12+): no Hash object per request.
  return hash('sha256', key, 'buffer');
}
