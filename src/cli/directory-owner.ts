import { statSync } from 'node:fs';
import { CommandError } from './errors.js';
import { describeUser, userName } from './users.js';

const KEY_FILE_REASON = "a key file root wrote there would be root's, and that user's server could not read it";

/**
 * Root writing into a directory another user owns (the key file, by default) would leave a file of root's,
 * 0600, that the user's server cannot use. Refused, saying `why` and how to run `command` as the directory's owner.
 */
export function refuseRootInOthersDirectory(dir: string, command: string, why = KEY_FILE_REASON): void {
  if (process.geteuid?.() !== 0) return;
  const stats = statSync(dir, { throwIfNoEntry: false });
  if (stats === undefined || stats.uid === 0) return;
  const name = userName(stats.uid);
  const asOwner =
    name === undefined
      ? `setpriv --reuid=${stats.uid} --regid=${stats.gid} --clear-groups -- ${command}`
      : `runuser -u ${name} -- ${command}`;
  throw new CommandError(`${dir} belongs to ${describeUser(stats.uid)}: ${why}; run this as that user: ${asOwner}`);
}
