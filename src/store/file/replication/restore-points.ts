import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FileSystem } from '../../../lib/file-system.js';
import { readLiveDirectory } from '../backup.js';
import type { Destination } from './destinations/destination.js';
import { historyKeys, newestLineages, readLineages } from './history.js';
import { layOut, readPosition, replicatedStore } from './replica.js';

/** One position a restore can aim at, with what it holds. */
export interface RestorePointSummary {
  lineage: string;
  generation: number;
  seq: number;
  time: string;
  /** The highest pet id it holds (0: none) and how many pets. */
  highest: number;
  pets: number;
  /** Whether it is of the newest history (its lineage, or one that lineage continues from, up to where it did). */
  newest: boolean;
}

/**
 * Every restore point of the destination's store, lineage by lineage in the order they continue each
 * other (generation), each position laid out in a temporary directory and read as a restore reads it:
 * as many reads as `verify --from` makes.
 */
export async function* restorePoints(fs: FileSystem, destination: Destination): AsyncGenerator<RestorePointSummary> {
  const store = await replicatedStore(destination);
  const lineages = (await readLineages(destination))
    .filter((lineage) => lineage.store === store)
    .sort((a, b) => a.generation - b.generation || (a.id < b.id ? -1 : 1));
  const newest = new Set(newestLineages(lineages, store).flatMap((lineage) => historyKeys(lineage, lineages)));
  const scratch = await mkdtemp(join(tmpdir(), 'petstore-restore-points-'));
  try {
    for (const lineage of lineages) {
      for (const key of lineage.keys) {
        const { position } = await readPosition(destination, key);
        const dir = join(scratch, String(position.seq));
        await fs.mkdir(dir);
        await layOut(destination, position, dir);
        const { index } = await readLiveDirectory(fs, dir);
        await rm(dir, { recursive: true, force: true });
        const { time, seq, generation } = position;
        const highest = index.size === 0 ? 0 : index.lastId;
        yield { lineage: lineage.id, generation, seq, time, highest, pets: index.size, newest: newest.has(key) };
      }
    }
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
