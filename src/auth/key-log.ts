import type { Logger } from '../lib/logger.js';
import type { KeyringOptions } from './keyring.js';

/** A Keyring's `onChange` that logs one line per key that came or went: its id, never the key. */
export function logKeyChanges(logger: Logger): NonNullable<KeyringOptions['onChange']> {
  return (added, removed) => {
    for (const id of added) logger.info('API key added', { keyId: id });
    for (const id of removed) logger.info('API key revoked', { keyId: id });
  };
}

/** A Keyring's `onDuplicate` that logs it as a warning: ids and places, never the key. */
export function logKeyDuplicates(logger: Logger): NonNullable<KeyringOptions['onDuplicate']> {
  return (message, fields) => logger.error(message, undefined, fields);
}
