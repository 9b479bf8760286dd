import type { FileSystem } from '../../../lib/file-system.js';
import { readLiveDirectory } from '../backup.js';
import { StoreDamagedError } from '../damage.js';
import type { LoadedDirectory } from '../load.js';
import type { Destination } from './destinations/destination.js';
import type { Position } from './layout.js';
import { layOut } from './replica.js';

/**
 * Lays `position` out in `dir` (which exists and is empty) and reads it as the store reads its own
 * directory at start, every record checked: what a restore gives back. One check for `restore` and
 * `verify --from`, so that verify never calls intact a position that restore refuses. Throws
 * StoreDamagedError for damaged records, StoreOpenError for a directory that does not open.
 */
export async function readRestorable(
  fs: FileSystem,
  destination: Destination,
  position: Position,
  dir: string,
): Promise<LoadedDirectory> {
  await layOut(destination, position, dir);
  const live = await readLiveDirectory(fs, dir);
  if (live.damage.length > 0) throw new StoreDamagedError(live.damage);
  return live;
}
