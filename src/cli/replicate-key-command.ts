import { errorCode } from '../lib/system-error.js';
import { writeReplicaKey } from '../store/file/replication/destinations/replica-keys.js';
import { CommandError, UsageError } from './errors.js';

const USAGE = 'usage: replicate-key create <file> | replicate-key rotate <file>';

/**
 * `replicate-key create <file>`: a new 256-bit key for --replicate-key-file, in a new file (0600).
 * `replicate-key rotate <file>`: a new first key, which seals from the next start on; the older keys
 * stay in the file to open what they sealed.
 */
export async function runReplicateKeyCommand(args: readonly string[], out: (line: string) => void): Promise<void> {
  const [verb, path, ...extra] = args;
  if ((verb !== 'create' && verb !== 'rotate') || path === undefined || extra.length > 0) throw new UsageError(USAGE);
  try {
    const id = await writeReplicaKey(path, verb === 'rotate');
    out(
      `${verb === 'create' ? 'wrote' : 'added'} replica key ${id} to ${path}: keep a copy off this machine, ` +
        'without it the replicas cannot be restored',
    );
  } catch (error) {
    if (errorCode(error) === 'EEXIST') {
      throw new CommandError(`${path} exists; "replicate-key rotate ${path}" adds a new key to it`);
    }
    throw error;
  }
}
