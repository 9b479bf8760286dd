import { rm } from 'node:fs/promises';
import type { FileSystem } from '../../../lib/file-system.js';
import { reportToStderr } from '../../../lib/system-error.js';
import { writeStoreCopy } from '../backup.js';
import { stagingDirectory } from '../staging.js';
import type { LoadedDirectory } from '../load.js';
import { ReplicationError, type Destination } from './destinations/destination.js';
import { chooseLineage, historyKeys, readLineages } from './history.js';
import { readPosition, replicatedStore, type FoundPosition } from './replica.js';
import { readRestorable } from './restorable.js';

/**
 * Where a restore stops: the newest position (undefined), the newest at or before a time, or holding no pet after an
 * id.
 */
export type RestorePoint = undefined | { time: Date } | { id: number };

/**
 * Ids skipped past the highest the replicas tell of: the store handed out ids after its newest
 * position that no replica holds (creates of the last interval, and ids taken by failed commits),
 * and a restored store must never hand one out again. A million at least, more for a store that was
 * handing ids out fast: twice its rate over its newest lineage, for the time since its newest position.
 */
export function idMargin(first: FoundPosition['position'], last: FoundPosition['position'], now = Date.now()): number {
  const span = (Date.parse(last.time) - Date.parse(first.time)) / 1000;
  const rate = span > 0 ? (last.idsHandedOut - first.idsHandedOut) / span : 0;
  return 1_000_000 + Math.ceil(2 * rate * Math.max(0, (now - Date.parse(last.time)) / 1000));
}

export interface Restored {
  store: string;
  position: FoundPosition;
  live: LoadedDirectory;
  /** How many of live's pets are restored (those up to --until's id, or all), and the highest id of them. */
  count: number;
  highest: number;
  /** The id the restored store continues after. */
  lastId: number;
  /** Lines of the position out of order, set back or dropped as repeats (restorable.ts). */
  setBack: number;
}

/**
 * Restores the replicas in `destination` as of `point` into a staging directory beside `target`:
 * the newest history's (or the `chosen` lineage's) position for the point is laid out, read as the
 * store reads it (every record checked), and kept to the pets up to an --until id. A point past the
 * newest position or before the oldest one is refused, naming the restore point nearest to it.
 */
export async function restoreReplica(
  fs: FileSystem,
  destination: Destination,
  point: RestorePoint,
  target: string,
  chosen?: string,
): Promise<Restored & { staging: string }> {
  const store = await replicatedStore(destination);
  const lineages = await readLineages(destination);
  const lineage = chooseLineage(lineages, store, destination.name, chosen);
  const keys = historyKeys(lineage, lineages);
  const newest = lineage.newest;
  const firstOfNewest = await readPosition(destination, lineage.keys[0] as string);
  const handedOut = newest.position.idsHandedOut + idMargin(firstOfNewest.position, newest.position);
  const found = await positionFor(destination, keys, newest, point);
  const staging = await stagingDirectory(target, 'restore');
  try {
    const { live, setBack } = await readRestorable(fs, destination, found.position, staging);
    const { count, highest } = upTo(live, point !== undefined && 'id' in point ? point.id : Infinity);
    if (point !== undefined && 'id' in point && count === live.index.size && highest < point.id) {
      throw new ReplicationError(
        'not_found',
        `--until ${point.id} is past the newest restore point of ` +
          `${destination.name}, which holds pets up to id ${highest} (${where(found)}): pets after it may have been ` +
          `created and are not ` +
          'there; restore without --until for the newest',
      );
    }
    const lastId = Math.max(handedOut, live.lastId);
    return { store, position: found, live, count, highest, lastId, setBack, staging };
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(reportToStderr);
    throw error;
  }
}

const where = ({ position }: FoundPosition): string =>
  `${position.time}, lineage ${position.lineage}, position ${position.seq}`;

/** The number of pets with an id up to `id` (the first ones: pets are in id order), and the highest id of them. */
function upTo(live: LoadedDirectory, id: number): { count: number; highest: number } {
  let count = 0;
  let highest = 0;
  for (const line of live.index.lines(live.index.size)) {
    if (line.id > id) break;
    count++;
    highest = line.id;
  }
  return { count, highest };
}

/**
 * The position of the history (`keys`, oldest first) to restore `point` from: the newest; for a time,
 * the last one at or before it; for an id, the first that the store had committed that id by (it
 * holds every pet up to it), else the newest.
 */
async function positionFor(
  destination: Destination,
  keys: readonly string[],
  newest: FoundPosition,
  point: RestorePoint,
): Promise<FoundPosition> {
  if (point === undefined) return newest;
  if ('id' in point) {
    for (const key of keys) {
      const found = key === newest.key ? newest : await readPosition(destination, key);
      if (found.position.committedAtLeast >= point.id) return found;
    }
    return newest;
  }
  const time = point.time.getTime();
  if (time > Date.parse(newest.position.time)) {
    throw new ReplicationError(
      'not_found',
      `--until ${point.time.toISOString()} is after the newest restore point of ` +
        `${destination.name} (${where(newest)}): what was created after it is not there; ` +
        'restore without --until for it',
    );
  }
  for (const key of [...keys].reverse()) {
    const found = key === newest.key ? newest : await readPosition(destination, key);
    if (Date.parse(found.position.time) <= time) return found;
  }
  const oldest = await readPosition(destination, keys[0] as string);
  throw new ReplicationError(
    'not_found',
    `--until ${point.time.toISOString()} is before the oldest restore point of ` +
      `${destination.name} (${where(oldest)}); nothing older is kept (--replicate-retention)`,
  );
}

/** Writes what restoreReplica found into `dir` as a stopped store leaves it. */
export async function writeRestored(fs: FileSystem, dir: string, restored: Restored): Promise<void> {
  await writeStoreCopy(fs, dir, { ...restored.live, lastId: restored.lastId }, reportToStderr, restored.count);
}
