import { rm } from 'node:fs/promises';
import type { FileSystem } from '../../../lib/file-system.js';
import { reportToStderr } from '../../../lib/system-error.js';
import { readLiveDirectory, writeStoreCopy } from '../backup.js';
import { StoreDamagedError } from '../damage.js';
import { stagingDirectory } from '../staging.js';
import type { LoadedDirectory } from '../load.js';
import { ReplicationError, type Destination } from './destination.js';
import { layOut, positionKeys, readPosition, replicatedStore, type FoundPosition } from './replica.js';

/** Where a restore stops: the newest position (undefined), the newest at or before a time, or holding no pet after an id. */
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
  /** The id the restored store continues after. */
  lastId: number;
}

/**
 * Restores the replicas in `destination` as of `point` into `fill`'s directory: the position's files
 * are laid out in a staging directory beside `target`, read as the store reads them (every record
 * checked), and written as a compacted store that continues beyond every id handed out.
 */
export async function restoreReplica(fs: FileSystem, destination: Destination, point: RestorePoint, target: string): Promise<Restored & { staging: string }> {
  const store = await replicatedStore(destination);
  const keys = await positionKeys(destination);
  if (keys.length === 0) throw new ReplicationError('not_found', `${destination.name} holds no position yet: nothing was replicated`);
  // Lineage ids begin with their start time, so the newest position of all is the last key.
  const newest = await readPosition(destination, keys.at(-1) as string);
  const firstOfNewest = await readPosition(destination, keys.find((key) => key.startsWith(`lineages/${newest.position.lineage}/`)) as string);
  const handedOut = newest.position.idsHandedOut + idMargin(firstOfNewest.position, newest.position);
  const staging = await stagingDirectory(target, 'restore');
  try {
    for (const key of [...keys].reverse()) {
      const found = key === newest.key ? newest : await readPosition(destination, key);
      if (found.position.store !== store) continue; // a store whose destination this one took over
      if (point !== undefined && 'time' in point && Date.parse(found.position.time) > point.time.getTime()) continue;
      if (point !== undefined && 'id' in point && found.position.committedAtLeast > point.id) continue;
      await rm(staging, { recursive: true, force: true });
      await fs.mkdir(staging);
      await layOut(destination, found.position, staging);
      const live = await readLiveDirectory(fs, staging);
      if (live.damage.length > 0) throw new StoreDamagedError(live.damage);
      if (point !== undefined && 'id' in point && live.index.lastId > point.id) continue;
      return { store, position: found, live, lastId: Math.max(handedOut, live.lastId), staging };
    }
  } catch (error) {
    await rm(staging, { recursive: true, force: true }).catch(reportToStderr);
    throw error;
  }
  await rm(staging, { recursive: true, force: true });
  throw new ReplicationError('not_found', `${destination.name} holds no position ${point !== undefined && 'id' in point ? `without a pet after id ${point.id}` : 'at or before that time'}`);
}

/** Writes what restoreReplica found into `dir` as a stopped store leaves it. */
export async function writeRestored(fs: FileSystem, dir: string, restored: Restored): Promise<void> {
  await writeStoreCopy(fs, dir, { ...restored.live, lastId: restored.lastId }, reportToStderr);
}
