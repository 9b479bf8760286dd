import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { reportToStderr } from '../lib/system-error.js';
import { readLiveDirectory, writeStoreCopy } from '../store/file/backup.js';
import { StoreDamagedError } from '../store/file/damage.js';
import { UsageError } from './config.js';
import { checkDestination, checkSource, counted, writeDataDirectory } from './data-copy.js';

/**
 * `backup <dest>`: a consistent, compacted, durable copy of the data directory `dataDir`, which a
 * server may be running on, that a server started on `dest` serves exactly. It is made in a temp
 * directory beside `dest` and renamed into place last, so a `dest` that exists is a whole backup.
 * Every record is checked as it is copied: a directory with damaged records is not backed up (that
 * is `repair`'s work, which says what it leaves out).
 */
export async function runBackupCommand(
  dataDir: string,
  args: readonly string[],
  out: (line: string) => void,
  fs: FileSystem = nodeFileSystem,
): Promise<void> {
  const [dest, ...extra] = args;
  if (dest === undefined || extra.length > 0) throw new UsageError('usage: backup <dest-dir> [--data-dir <dir>]');
  await checkSource(fs, dataDir, 'back up');
  await checkDestination(dest, dataDir, 'a backup');
  const live = await readLiveDirectory(fs, dataDir);
  if (live.damage.length > 0) throw new StoreDamagedError(live.damage);
  const keys = await writeDataDirectory(fs, dataDir, dest, (dir) => writeStoreCopy(fs, dir, live, reportToStderr));
  out(
    `backed up ${counted(live.index.size, 'pet')} (last id ${live.index.lastId}) and ` +
      `${counted(keys, 'API key hash', 'API key hashes')} from ${dataDir} to ${dest}`,
  );
}
