import { randomBytes, randomUUID } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { LockFile } from '../lib/lock-file.js';
import { readPrivateFileSync } from '../lib/private-file.js';
import { sha256 } from '../lib/sha256.js';
import { replaceFile } from '../lib/replace-file.js';
import { reportToStderr } from '../lib/system-error.js';
import { SCOPES, type Scope } from '../pet/contract.js';
import { scopeBits } from './key-scopes.js';
import { checkQuota, type QuotaPolicy } from './quota.js';

/**
 * API keys issued by this service, kept in `keys.json` in the data directory as SHA-256 hashes with
 * a label, creation time, scopes and own quota: `{"format":"petstore-keys/2","keys":[…]}`. The key
 * itself is shown once, when created, and stored nowhere. A file without "format" (written before it
 * existed) is format 1; format 1 had no scopes, and a key without scopes holds every scope.
 */
const KEY_FILE = 'keys.json';
const KEY_FORMAT = 'petstore-keys/2';
const READABLE_FORMATS: readonly unknown[] = [undefined, 'petstore-keys/1', KEY_FORMAT];

/** The key file's content cannot be used (not JSON, not a key file, a newer format). */
export class KeyFileError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'KeyFileError';
  }
}

export interface StoredKey {
  id: string;
  label: string;
  created: string;
  sha256: string;
  /** What the key may do; absent: every scope (all keys of format 1). */
  scopes?: Scope[];
  /** Its own quota instead of the server's `--rate-limit`. */
  rateLimit?: QuotaPolicy;
}

const hashKey = (key: string): string => sha256(key).toString('hex');

export const keyFilePath = (dataDir: string): string => join(dataDir, KEY_FILE);

/**
 * The stored keys, or undefined when the file does not exist. A key file that another user could
 * have written (a symlink, writable by group or others, owned by neither us nor root) is refused.
 */
export function readKeyFile(path: string): StoredKey[] | undefined {
  const text = readPrivateFileSync(path)?.toString('utf8');
  if (text === undefined) return undefined;
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new KeyFileError(
      `${path} is not valid JSON: ${(error as Error).message}; restore it from a backup, or correct it by hand`,
      { cause: error },
    );
  }
  const format = (document as { format?: unknown } | null)?.format;
  if (!READABLE_FORMATS.includes(format)) {
    const newer = typeof format === 'string' && /^petstore-keys\/([3-9]|[1-9][0-9]{1,8})$/.test(format);
    throw new KeyFileError(
      newer
        ? `${path} was written by a newer version of the server (format ${format}); upgrade the server to use this data`
        : `${path} is not a key file (expected "format": "${KEY_FORMAT}"); restore it from a backup, or move it away ` +
            `if it is another file`,
    );
  }
  const keys = (document as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || !keys.every(isStoredKey))
    throw new KeyFileError(
      `${path} is not a key file (expected {"keys": [{id, label, created, sha256}]}); restore it from a backup, or ` +
        `correct it by hand`,
    );
  for (const key of keys) checkGrants(path, key);
  return keys;
}

function isStoredKey(value: unknown): value is StoredKey {
  const key = value as Partial<StoredKey> | null;
  return (
    typeof key?.id === 'string' &&
    typeof key.label === 'string' &&
    typeof key.created === 'string' &&
    typeof key.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(key.sha256) &&
    (key.scopes === undefined || (Array.isArray(key.scopes) && key.scopes.every((s) => typeof s === 'string'))) &&
    (key.rateLimit === undefined || (typeof key.rateLimit === 'object' && key.rateLimit !== null))
  );
}

/** A key's scopes must be known ones and its quota in range: said with the key's id, as a hand edit may be wrong. */
function checkGrants(path: string, key: StoredKey): void {
  try {
    scopeBits(key.scopes);
    if (key.rateLimit !== undefined) checkQuota(key.rateLimit);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
    throw new KeyFileError(`${path}: key ${key.id}: ${error.message}; correct it by hand, or revoke the key`, {
      cause: error,
    });
  }
}

/**
 * Identity of the key file's current content and who may change it, cheap to get: a rewrite is a
 * new inode (it is renamed into place), so even a change within the file system's timestamp
 * granularity is noticed; a chmod or chown is a new version too, so that it is checked at once.
 */
export function keyFileVersion(path: string): string {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  return stat === undefined ? 'absent' : `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.mode}:${stat.uid}`;
}

/**
 * Read-modify-write of the key file under an exclusive lock, so that two `keys create` run at the
 * same moment both keep their key. `change` returns the new list, or undefined to leave the file as
 * is. The file is replaced atomically and durably, as the store replaces its snapshot.
 */
export async function updateKeyFile<T>(
  path: string,
  change: (keys: StoredKey[] | undefined) => { keys?: StoredKey[]; result: T },
  fs: FileSystem = nodeFileSystem,
): Promise<T> {
  const lock = await LockFile.acquire(`${path}.lock`, 5000);
  try {
    const { keys, result } = change(readKeyFile(path));
    if (keys !== undefined) await writeKeyFile(fs, path, keys);
    return result;
  } finally {
    lock.release();
  }
}

/** Replaces the key file at `path` atomically and durably with `keys`, as the store replaces its snapshot. */
export async function writeKeyFile(fs: FileSystem, path: string, keys: readonly StoredKey[]): Promise<void> {
  await replaceFile(fs, path, [`${JSON.stringify({ format: KEY_FORMAT, keys }, null, 2)}\n`], reportToStderr);
}

/**
 * Creates a key that holds `scopes` (and its own quota, if given): returns it (to show once) and the record to store.
 */
export function newKey(
  label: string,
  scopes: readonly Scope[] = SCOPES,
  rateLimit?: QuotaPolicy,
): { key: string; record: StoredKey } {
  const key = `pet_${randomBytes(32).toString('base64url')}`;
  const record: StoredKey = {
    id: randomUUID().slice(0, 8),
    label,
    created: new Date().toISOString(),
    sha256: hashKey(key),
    scopes: [...scopes],
  };
  if (rateLimit !== undefined) record.rateLimit = rateLimit;
  return { key, record };
}

/**
 * With no key configured anywhere, the first start generates one and keeps only its hash. Returns
 * the key to show once, or undefined when a key file already exists.
 */
export function generateFirstKey(dataDir: string): Promise<string | undefined> {
  return updateKeyFile(keyFilePath(dataDir), (existing) => {
    if (existing !== undefined) return { result: undefined };
    const { key, record } = newKey('generated at first start');
    return { keys: [record], result: key };
  });
}

/**
 * Takes back the key generateFirstKey made for a start that then failed: its key file goes while it
 * holds that key alone, so the key is never shown (the failed start's output may be kept where many
 * read it) and the next start that serves generates one and shows it. Whether it was taken back.
 */
export async function withdrawFirstKey(
  dataDir: string,
  key: string,
  fs: FileSystem = nodeFileSystem,
): Promise<boolean> {
  const path = keyFilePath(dataDir);
  const lock = await LockFile.acquire(`${path}.lock`, 5000);
  try {
    const existing = readKeyFile(path);
    const alone = existing?.length === 1 && existing[0]?.sha256 === hashKey(key);
    if (alone) await fs.unlink(path);
    return alone;
  } finally {
    lock.release();
  }
}
