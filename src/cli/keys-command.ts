import { keyFilePath, newKey, readKeyFile, updateKeyFile, type StoredKey } from '../auth/key-file.js';
import { makeDirectory, nodeFileSystem } from '../lib/file-system.js';
import { refuseRootInOthersDirectory } from './directory-owner.js';
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

/** `keys create [--label L] | keys list | keys revoke <id>` on `storage` (`label` only with create). */
export async function runKeysCommand(storage: KeyStorage, args: readonly string[], label: string | undefined, out: (line: string) => void): Promise<void> {
  const [action, ...rest] = args;
  switch (action) {
    case 'create': {
      if (rest.length > 0) throw new UsageError('"keys create" takes no arguments besides --label');
      // A label is shown one per line by keys list: a control character could forge lines there.
      if (label !== undefined && /[\x00-\x1f\x7f]/.test(label)) throw new UsageError('--label must not hold control characters (newlines, tabs, …)');
      const { key, record } = newKey(label ?? '');
      await storage.add(record);
      out(`created key ${record.id}${record.label === '' ? '' : ` (${record.label})`}; it is shown only this once:`);
      out(key);
      return;
    }
    case 'list': {
      if (rest.length > 0) throw new UsageError('"keys list" takes no arguments');
      const keys = await storage.list();
      if (keys.length === 0) out(`no keys in ${storage.where}`);
      for (const k of keys) out(`${k.id}  ${k.created}  ${k.label}`);
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
      throw new UsageError('usage: keys create [--label <text>] | keys list | keys revoke <id>');
  }
}
