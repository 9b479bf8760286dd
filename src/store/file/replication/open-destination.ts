import { mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { claimPrivateDirectory } from '../../../lib/private-file.js';
import { errorCode } from '../../../lib/system-error.js';
import { ReplicationError, type Destination } from './destination.js';
import { DirectoryDestination, type DirectoryCalls } from './directory-destination.js';

/**
 * The destination `raw` names (--replicate-to): a directory path, made private (0700) and checked
 * like the data directory, and never the data directory or inside it, where the server would take
 * its files for part of the store; refused with what to fix when it cannot be used.
 */
export async function openDestination(raw: string, dataDir: string | undefined, calls?: DirectoryCalls): Promise<Destination> {
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(raw)) {
    throw new ReplicationError('refused', `--replicate-to ${raw.replace(/\/\/[^@/]*@/, '//…@')}: only a directory path is supported here; s3:// destinations are not in this version`);
  }
  const dir = resolve(raw);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const real = await realpath(dir);
    if (dataDir !== undefined) {
      const data = await realpath(resolve(dataDir));
      const path = relative(data, real);
      if (path === '' || !(path === '..' || path.startsWith(`..${sep}`) || isAbsolute(path))) {
        throw new ReplicationError('refused', `--replicate-to ${raw} is the data directory or inside it; replicas go elsewhere, best on another machine or disk`);
      }
    }
    claimPrivateDirectory(real);
  } catch (error) {
    if (error instanceof ReplicationError) throw error;
    const code = errorCode(error);
    throw new ReplicationError('refused', `--replicate-to ${raw} cannot be used: ${code === undefined ? (error as Error).message : code}`, { cause: error });
  }
  return new DirectoryDestination(dir, calls);
}
