import type { FileSystem } from '../../../lib/file-system.js';
import { readLiveDirectory } from '../backup.js';
import { StoreDamagedError } from '../damage.js';
import type { LoadedDirectory } from '../load.js';
import type { Destination } from './destinations/destination.js';
import type { Position } from './layout.js';
import { layOut } from './replica.js';

/** What a restore of a position gives back: the directory read, and how many lines of it were set back in order. */
export interface RestorableDirectory {
  live: LoadedDirectory;
  /**
   * Intact lines found out of order, each a byte-for-byte repeat of a pet held or a pet set back in id order: what
   * builds before the compaction fix shipped when a snapshot took in pets of the journal after it. Nothing is lost.
   */
  setBack: number;
}

/**
 * Lays `position` out in `dir` (which exists and is empty) and reads it as the store reads its own
 * directory at start, every record checked: what a restore gives back. One check for `restore` and
 * `verify --from`, so that verify never calls intact a position that restore refuses. Throws
 * StoreDamagedError for damage other than lines set back, StoreOpenError for a directory that does not open.
 */
export async function readRestorable(
  fs: FileSystem,
  destination: Destination,
  position: Position,
  dir: string,
): Promise<RestorableDirectory> {
  await layOut(destination, position, dir);
  const live = await readLiveDirectory(fs, dir);
  const lost = live.damage.filter((d) => d.kind !== 'out-of-order' || d.kept !== true);
  if (lost.length > 0) throw new StoreDamagedError(lost);
  return { live, setBack: live.damage.length };
}
