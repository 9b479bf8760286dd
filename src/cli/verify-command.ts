import { join } from 'node:path';
import { nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { readLiveDirectory } from '../store/file/backup.js';
import { describeDamage } from '../store/file/damage.js';
import { IDS_FILE, journalFile } from '../store/file/file-names.js';
import { CopyRefused, checkSource, counted } from './data-copy.js';
import { UsageError } from './errors.js';

/**
 * `verify [--data-dir D]`: reads every record of D and checks it against its checksum, without the
 * directory's lock, so also while a server runs on it (a compaction meanwhile makes it read again).
 * Prints the number of intact pets and every damaged place; returns the exit code: 0 intact, 1 damaged.
 */
export async function runVerifyCommand(
  dataDir: string,
  args: readonly string[],
  out: (line: string) => void,
  fs: FileSystem = nodeFileSystem,
): Promise<number> {
  if (args.length > 0) throw new UsageError('usage: verify [--data-dir <dir>]');
  // A directory that holds no store is a wrong --data-dir, not a damaged store.
  await checkSource(fs, dataDir, 'verify').catch((error: unknown) => {
    throw error instanceof CopyRefused ? new UsageError(error.message) : error;
  });
  const { index, format, damage, tornBytes, generations, idsMissing, lastId } = await readLiveDirectory(fs, dataDir);
  if (format !== 3 && format !== 4) {
    out(
      `${dataDir}: ${counted(index.size, 'pet')} in format ${format ?? 1}, whose records carry no checksums: only ` +
        `their form was checked; a server started on it rewrites it in format 4`,
    );
    return 0;
  }
  // Not damage: an append under way, or one a crash cut short. Said, as bytes at the end of a journal can be either.
  const missing = idsMissing
    ? [
        `  ${join(dataDir, IDS_FILE)} is missing, so which ids were handed out past the records is not known: a ` +
          `start goes on from ${lastId + 1}, a block past them`,
      ]
    : [];
  const notes =
    tornBytes === 0
      ? missing
      : [
          ...missing,
          `  the newest journal, ${journalFile(generations.at(-1) ?? 0)}, ends in ${tornBytes} bytes after its last ` +
            `complete line: an append under way, or one a crash cut short, which a start cuts`,
        ];
  if (damage.length === 0) {
    out(`${dataDir}: ${counted(index.size, 'pet')}, every record intact`);
    for (const line of notes) out(line);
    return 0;
  }
  out(
    `${dataDir}: ${counted(index.size, 'intact pet')}; ${damage.length} damaged ` +
      `${damage.length === 1 ? 'place' : 'places'}, never served:`,
  );
  for (const d of damage) out(`  ${describeDamage(d)}`);
  for (const line of notes) out(line);
  out(
    `"repair <new-dir> --data-dir ${dataDir}" writes a new data directory with every intact pet and sets the damaged ` +
      `bytes aside`,
  );
  return 1;
}
