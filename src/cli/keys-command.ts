import { keyFilePath, newKey, readKeyFile, updateKeyFile } from '../auth/key-file.js';
import { CommandError, UsageError } from './errors.js';
import { makeDirectory, nodeFileSystem } from '../lib/file-system.js';

/** `keys create [--label L] | keys list | keys revoke <id>` on the key file of a data directory (`label` only with create). */
export async function runKeysCommand(dataDir: string, args: readonly string[], label: string | undefined, out: (line: string) => void): Promise<void> {
  const [action, ...rest] = args;
  const path = keyFilePath(dataDir);
  switch (action) {
    case 'create': {
      if (rest.length > 0) throw new UsageError('"keys create" takes no arguments besides --label');
      await makeDirectory(nodeFileSystem, dataDir);
      const { key, record } = newKey(label ?? '');
      await updateKeyFile(path, (keys) => ({ keys: [...(keys ?? []), record], result: undefined }));
      out(`created key ${record.id}${record.label === '' ? '' : ` (${record.label})`}; it is shown only this once:`);
      out(key);
      return;
    }
    case 'list': {
      if (rest.length > 0) throw new UsageError('"keys list" takes no arguments');
      const keys = readKeyFile(path) ?? [];
      if (keys.length === 0) out(`no keys in ${path}`);
      for (const k of keys) out(`${k.id}  ${k.created}  ${k.label}`);
      return;
    }
    case 'revoke': {
      const [id, ...extra] = rest;
      if (id === undefined || extra.length > 0) throw new UsageError('usage: keys revoke <id>');
      if (readKeyFile(path) === undefined) throw new CommandError(`no key with id ${id}: there is no key file ${path}`);
      const found = await updateKeyFile(path, (keys = []) => {
        const remaining = keys.filter((k) => k.id !== id);
        return remaining.length === keys.length ? { result: false } : { keys: remaining, result: true };
      });
      if (!found) throw new CommandError(`no key with id ${id} in ${path}`);
      out(`revoked key ${id}`);
      return;
    }
    default:
      throw new UsageError('usage: keys create [--label <text>] | keys list | keys revoke <id>');
  }
}
