import { KeyFileError } from './key-file.js';
import type { QuotaPolicy } from './quota.js';
import type { ScopeBits } from './key-scopes.js';

/** Where a key was found: given directly (PETSTORE_API_KEYS, createPetstore's `keys`), the key file, the database. */
export type KeyPlace = 'given' | 'file' | 'database';

/** A key as the keyring holds it: its SHA-256 digest, what it may do, and where it came from. */
export interface KeyEntry<
  K extends { readonly id: string; readonly scopes: ScopeBits; readonly quota: QuotaPolicy | undefined },
> {
  digest: Buffer;
  key: K;
  place: KeyPlace;
}

/**
 * The same key found twice at start (in two places, or twice in one): which one is meant cannot be
 * guessed, and one of them would be silently ignored, its quota or its revocation with it. A
 * KeyFileError, so that the command line says it as a refusal, not as a bug.
 */
export class DuplicateKeyError extends KeyFileError {
  constructor(message: string) {
    super(message);
    this.name = 'DuplicateKeyError';
  }
}

/**
 * One entry per key: `entries` in order, with each key found again merged into its first entry by
 * `stricter`. At start (`strict`) a key found twice is thrown as a DuplicateKeyError naming both
 * places; later `onTwice` is told of each (the first entry's key and the one found again).
 */
export function mergeDuplicates<
  K extends { readonly id: string; readonly scopes: ScopeBits; readonly quota: QuotaPolicy | undefined },
>(
  entries: readonly KeyEntry<K>[],
  strict: boolean,
  describe: (entry: KeyEntry<K>) => string,
  stricter: (a: K, b: K) => K,
  onTwice: (first: KeyEntry<K>, again: KeyEntry<K>) => void,
): KeyEntry<K>[] {
  const byDigest = new Map<string, KeyEntry<K>>();
  for (const entry of entries) {
    const hex = entry.digest.toString('hex');
    const first = byDigest.get(hex);
    if (first === undefined) {
      byDigest.set(hex, { ...entry });
      continue;
    }
    if (strict)
      throw new DuplicateKeyError(
        `the API key ${describe(first)} is also ${describe(entry)}; give each key once: remove one of the two`,
      );
    onTwice(first, entry);
    first.key = stricter(first.key, entry.key);
  }
  return [...byDigest.values()];
}

/**
 * Of two entries for one key, what both allow: the scopes both hold, the lower quota (the one with a
 * quota of its own when the other has none, as the server's may be none at all), and the id of `b`,
 * the later place (the key file or the database, where `keys revoke` acts).
 */
export function stricterKey<
  K extends { readonly id: string; readonly scopes: ScopeBits; readonly quota: QuotaPolicy | undefined },
>(a: K, b: K): K {
  return { ...b, scopes: a.scopes & b.scopes, quota: lowerQuota(a.quota, b.quota) };
}

function lowerQuota(a: QuotaPolicy | undefined, b: QuotaPolicy | undefined): QuotaPolicy | undefined {
  if (a === undefined || b === undefined) return a ?? b;
  // The lower rate; of two equal rates, the shorter window (fewer requests at once).
  const left = a.requests * b.seconds;
  const right = b.requests * a.seconds;
  if (left !== right) return left < right ? a : b;
  return a.seconds <= b.seconds ? a : b;
}
