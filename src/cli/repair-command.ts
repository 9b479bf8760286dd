import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { replaceFile } from '../lib/replace-file.js';
import { reportToStderr } from '../lib/system-error.js';
import { readLiveDirectory, writeStoreCopy } from '../store/file/backup.js';
import { damageReport, setAside } from '../store/file/damage.js';
import { RESERVE_BLOCK } from '../store/file/id-reservation.js';
import { CopyRefused, checkDestination, checkSource, counted, writeDataDirectory } from './data-copy.js';
import { UsageError } from './errors.js';

/** Where a repair sets the damaged bytes aside, in the new directory; the server ignores the file. */
export const DAMAGE_FILE = 'damaged-records.jsonl';

/**
 * `repair <dest> [--data-dir D]`: writes a new data directory `dest` with every intact pet of D (same
 * ids, same bytes, idempotency records kept) and its key file, and sets every damaged place aside in
 * `dest/damaged-records.jsonl`. D is only read. New pets in `dest` get ids above every id seen in D,
 * damaged records' included, so that no id is handed out twice.
 */
export async function runRepairCommand(
  dataDir: string,
  args: readonly string[],
  out: (line: string) => void,
  fs: FileSystem = nodeFileSystem,
): Promise<void> {
  const [dest, ...extra] = args;
  if (dest === undefined || extra.length > 0) throw new UsageError('usage: repair <dest-dir> [--data-dir <dir>]');
  // A directory that holds no store is a wrong --data-dir, as verify says it (exit 2).
  await checkSource(fs, dataDir, 'repair').catch((error: unknown) => {
    throw error instanceof CopyRefused ? new UsageError(error.message) : error;
  });
  await checkDestination(dest, dataDir, 'a repair');
  const live = await readLiveDirectory(fs, dataDir);
  const aside = setAside(live.damage);
  const keys = await writeDataDirectory(fs, dataDir, dest, async (dir) => {
    await writeStoreCopy(fs, dir, live, reportToStderr);
    if (aside.length > 0) await replaceFile(fs, join(dir, DAMAGE_FILE), [damageReport(aside)], reportToStderr);
  });
  const setBack = live.damage.filter((d) => d.kind === 'out-of-order' && d.kept === true).length;
  const setBackText = setBack === 0 ? '' : ` (${setBack} of them from lines out of order, set back in id order)`;
  const kept = `kept ${counted(live.index.size, 'pet')}${setBackText}`;
  const damaged =
    aside.length === 0
      ? 'nothing was set aside'
      : `set aside ${aside.length} damaged ${aside.length === 1 ? 'place' : 'places'} in ${join(dest, DAMAGE_FILE)}`;
  const reserved =
    live.reservation !== undefined && !live.reservation.stopped && live.reservation.reserved === live.lastId
      ? ' (past the ids reserved before the store stopped uncleanly)'
      : '';
  out(
    `repaired ${dataDir} into ${dest}: ${kept} and ${counted(keys, 'API key hash', 'API key hashes')}, ${damaged}; ` +
      `new pets get ids from ${live.lastId + 1}${reserved}`,
  );
  if (live.damage.some((d) => d.kind === 'whole-file')) {
    out(
      "pets.json's checksum does not match its records, though each record's own does: a record may have been " +
        'changed and checksummed anew, and which one cannot be known; every such pet was kept',
    );
  }
  if (live.idsMissing)
    out(
      `pets-ids.json was missing: new ids start ${RESERVE_BLOCK} past the records, as far as a store could have ` +
        `handed them out`,
    );
}
