import { keyFilePath, newKey, readKeyFile, updateKeyFile, type StoredKey } from '../auth/key-file.js';
import { isScope, scopeBits, scopeNames, unknownScope } from '../auth/key-scopes.js';
import { formatQuota, parseQuota } from '../auth/quota.js';
import type { Scope } from '../pet/contract.js';
import { makeDirectory, nodeFileSystem } from '../lib/file-system.js';
import { refuseRootInOthersDirectory } from './directory-owner.js';
import { embedderCheck } from './config.js';
import { CommandError, UsageError } from './errors.js';

/** Where `keys` commands keep the key records: the key file of a data directory, or a database. */
export interface KeyStorage {
  /** Named in messages: the key file's path, or the database without its password. */
  where: string;
  add(record: StoredKey): Promise<void>;
  list(): Promise<StoredKey[]>;
  /** Whether a key with `id` was there. */
  remove(id: string): Promise<boolean>;
}

/**
 * The key file of `dataDir`, read and changed under its lock; `command` is this command line, for the
 * advice to run it as the directory's owner when root would write there.
 */
export function keyFileStorage(dataDir: string, command: string): KeyStorage {
  const path = keyFilePath(dataDir);
  return {
    where: path,
    async add(record) {
      refuseRootInOthersDirectory(dataDir, command);
      await makeDirectory(nodeFileSystem, dataDir);
      await updateKeyFile(path, (keys) => ({ keys: [...(keys ?? []), record], result: undefined }));
    },
    list: async () => readKeyFile(path) ?? [],
    async remove(id) {
      // No key file, no key: and no lock file made in a directory that may not exist.
      if (readKeyFile(path) === undefined) return false;
      refuseRootInOthersDirectory(dataDir, command);
      return updateKeyFile(path, (keys = []) => {
        const remaining = keys.filter((k) => k.id !== id);
        return remaining.length === keys.length ? { result: false } : { keys: remaining, result: true };
      });
    },
  };
}

/** What `keys create` was given: --label, every --scope, and --rate-limit as written. */
export interface NewKeyOptions {
  label?: string | undefined;
  scopes?: readonly string[] | undefined;
  rateLimit?: string | undefined;
}

/** `keys create [--label L] [--scope S]… [--rate-limit N/S] | keys list | keys revoke <id>` on `storage`. */
export async function runKeysCommand(
  storage: KeyStorage,
  args: readonly string[],
  options: NewKeyOptions,
  out: (line: string) => void,
): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'create': {
      if (rest.length > 0)
        throw new UsageError('"keys create" takes no arguments besides --label, --scope and --rate-limit');
      const { label = '' } = options;
      // A label is shown one per line by keys list: a control character could forge lines there.
      if (/[\x00-\x1f\x7f]/.test(label))
        throw new UsageError('--label must not hold control characters (newlines, tabs, …)');
      const scopes = requestedScopes(options.scopes);
      const rateLimit =
        options.rateLimit === undefined ? undefined : embedderCheck(parseQuota)(options.rateLimit, '--rate-limit');
      const { key, record } = newKey(label, scopes, rateLimit);
      await storage.add(record);
      out(
        `created key ${record.id}${label === '' ? '' : ` (${label})`}; ${grants(record)}; it is shown only this once:`,
      );
      out(key);
      return;
    }
    case 'list': {
      if (rest.length > 0) throw new UsageError('"keys list" takes no arguments');
      const keys = await storage.list();
      if (keys.length === 0) out(`no keys in ${storage.where}`);
      else out('id  created  scopes  quota  label');
      for (const k of keys)
        out(
          `${k.id}  ${k.created}  ${scopeNames(scopeBits(k.scopes)).join(',')}  ` +
            `${k.rateLimit === undefined ? 'default' : formatQuota(k.rateLimit)}  ${k.label}`,
        );
      return;
    }
    case 'revoke': {
      const [id, ...extra] = rest;
      if (id === undefined || extra.length > 0) throw new UsageError('usage: keys revoke <id>');
      if (!(await storage.remove(id))) throw new CommandError(`no key with id ${id} in ${storage.where}`);
      out(`revoked key ${id}`);
      return;
    }
    default:
      throw new UsageError(
        'usage: keys create [--label <text>] [--scope <scope>]… [--rate-limit <requests>/<seconds>] | keys list | ' +
          'keys revoke <id>',
      );
  }
}

/** The scopes of --scope, each given once or as a comma-separated list; every scope without any. */
function requestedScopes(given: readonly string[] | undefined): Scope[] | undefined {
  if (given === undefined) return undefined;
  const names = given.flatMap((value) => value.split(',')).map((name) => name.trim());
  for (const name of names) if (!isScope(name)) throw new UsageError(`--scope: ${unknownScope(name)}`);
  return scopeNames(scopeBits(names));
}

/** What a new key may do, as `keys create` confirms it. */
function grants(record: StoredKey): string {
  const scopes = `scopes ${scopeNames(scopeBits(record.scopes)).join(', ')}`;
  return record.rateLimit === undefined
    ? scopes
    : `${scopes}; rate limit ${record.rateLimit.requests} requests per ${record.rateLimit.seconds} s`;
}
