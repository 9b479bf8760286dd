import { lstat, readdir, realpath } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { errorCode } from '../lib/system-error.js';

/**
 * The destination cannot take a new data directory (it holds files, is a link, lies inside the
 * source). It carries a code, as Node's own errors do, so that the command line shows its message alone.
 */
export class DestinationRefused extends Error {
  readonly code = 'ERR_PETSTORE_DESTINATION';

  constructor(message: string) {
    super(message);
    this.name = 'DestinationRefused';
  }
}

/**
 * Checks, before anything is copied, that `dest` may become a new data directory made from the one
 * in `dataDir` (`backup`, `repair`): it does not exist or is an empty directory, it is not a
 * symbolic link (the copy is renamed into place, which would replace the link, not fill its
 * target), and it lies outside `dataDir`, where the server would take it for part of the store.
 */
export async function checkDestination(dest: string, dataDir: string, what: string): Promise<void> {
  const stats = await lstat(dest).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  });
  const [source, target] = await Promise.all([realPathOf(dataDir), realPathOf(dest)]);
  const path = relative(source, target);
  if (path !== '..' && !path.startsWith(`..${sep}`)) {
    throw new DestinationRefused(`${dest} is inside the data directory ${dataDir}; ${what} goes outside it`);
  }
  if (stats?.isSymbolicLink() === true) throw new DestinationRefused(`${dest} is a symbolic link; give the directory it points to, or a new path`);
  if (stats !== undefined && !stats.isDirectory()) throw new DestinationRefused(`${dest} exists and is not a directory`);
  if (stats !== undefined && (await readdir(dest)).length > 0) throw new DestinationRefused(`${dest} is not empty; ${what} goes into a new or empty directory`);
}

/** The real path of `path`, also when it does not exist yet: its nearest existing ancestor resolved, the rest appended. */
async function realPathOf(path: string): Promise<string> {
  const absolute = resolve(path);
  try {
    return await realpath(absolute);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT' || dirname(absolute) === absolute) throw error;
    return join(await realPathOf(dirname(absolute)), basename(absolute));
  }
}
