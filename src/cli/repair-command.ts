import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { replaceFile } from '../lib/replace-file.js';
import { reportToStderr } from '../lib/system-error.js';
import { readLiveDirectory, writeStoreCopy } from '../store/file/backup.js';
import { damageReport } from '../store/file/damage.js';
import { checkDestination, checkSource, counted, writeDataDirectory } from './data-copy.js';
import { UsageError } from './errors.js';

/** Where a repair sets the damaged bytes aside, in the new directory; the server ignores the file. */
export const DAMAGE_FILE = 'damaged-records.jsonl';

/**
 * `repair <dest> [--data-dir D]`: writes a new data directory `dest` with every intact pet of D (same
 * ids, same bytes, idempotency records kept) and its key file, and sets every damaged place aside in
 * `dest/damaged-records.jsonl`. D is only read. New pets in `dest` get ids above every id seen in D,
 * damaged records' included, so that no id is handed out twice.
 */
export async function runRepairCommand(dataDir: string, args: readonly string[], out: (line: string) => void, fs: FileSystem = nodeFileSystem): Promise<void> {
  const [dest, ...extra] = args;
  if (dest === undefined || extra.length > 0) throw new UsageError('usage: repair <dest-dir> [--data-dir <dir>]');
  await checkSource(fs, dataDir, 'repair');
  await checkDestination(dest, dataDir, 'a repair');
  const live = await readLiveDirectory(fs, dataDir);
  const keys = await writeDataDirectory(fs, dataDir, dest, async (dir) => {
    await writeStoreCopy(fs, dir, live, reportToStderr);
    if (live.damage.length > 0) await replaceFile(fs, join(dir, DAMAGE_FILE), [damageReport(live.damage)], reportToStderr);
  });
  const aside = live.damage.length === 0 ? 'nothing was damaged' : `set aside ${live.damage.length} damaged ${live.damage.length === 1 ? 'place' : 'places'} in ${join(dest, DAMAGE_FILE)}`;
  out(`repaired ${dataDir} into ${dest}: kept ${counted(live.index.size, 'pet')} and ${counted(keys, 'API key hash', 'API key hashes')}, ${aside}; new pets get ids from ${live.lastId + 1}`);
}
