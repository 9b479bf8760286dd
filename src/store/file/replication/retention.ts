import type { Destination } from './destinations/destination.js';
import { LINEAGES, parsePositionKey } from './layout.js';
import { readLineages } from './history.js';
import { readPosition } from './replica.js';

/** The round an object of a lineage was shipped in: the number its name begins with. */
const objectRound = (key: string): number | undefined => {
  const match = /^lineages\/[^/]+\/data\/([0-9]{12})-/.exec(key);
  return match === null ? undefined : Number(match[1]);
};

/**
 * Removes what a restore to any time within `retentionMs` does not need. In the current lineage,
 * the positions before the newest one older than the window (point-in-time restores reach back to
 * it), and the objects of those rounds that it does not name: a later position names an object of an
 * earlier round only if that position names it too, since journals only grow and a file that comes
 * back anew is shipped in new rounds. Of earlier lineages of this store (a lower generation: earlier
 * runs), every one whose newest position is older than the window; while this lineage has no
 * position older than the window, the newest of them stays, as a restore to the window's start needs
 * it. Another store's lineages (one taken over) go once their newest position is older than the
 * window. Returns the number of objects removed.
 */
export async function applyRetention(
  destination: Destination,
  store: string,
  lineage: string,
  retentionMs: number,
  now = Date.now(),
): Promise<number> {
  const keys = await destination.list(LINEAGES);
  const byLineage = new Map<string, string[]>();
  for (const key of keys) {
    const name = key.split('/')[1] as string;
    byLineage.set(name, [...(byLineage.get(name) ?? []), key]);
  }
  const cutoff = now - retentionMs;
  let removed = 0;
  const remove = async (list: readonly string[]): Promise<void> => {
    for (const key of list) {
      await destination.delete(key);
      removed++;
    }
  };
  const own = byLineage.get(lineage) ?? [];
  const positions = own.filter((key) => parsePositionKey(key) !== undefined);
  // Times grow with the rounds: the newest position older than the window, found in log2(n) reads (the newest itself
  // always stays).
  let oldest: { key: string; seq: number } | undefined;
  let low = 0;
  let high = positions.length - 2;
  while (low <= high) {
    const middle = (low + high) >> 1;
    const found = await readPosition(destination, positions[middle] as string);
    if (Date.parse(found.position.time) < cutoff) {
      oldest = { key: found.key, seq: found.position.seq };
      low = middle + 1;
    } else {
      high = middle - 1;
    }
  }
  const lineages = await readLineages(destination);
  const generation = lineages.find((found) => found.id === lineage)?.generation ?? Infinity;
  const earlier = lineages
    .filter((found) => found.store === store && found.id !== lineage && found.generation < generation)
    .sort((a, b) => a.generation - b.generation || (a.id < b.id ? -1 : 1));
  const others = lineages.filter((found) => found.store !== store);
  for (const found of [...(oldest === undefined ? earlier.slice(0, -1) : earlier), ...others]) {
    if (Date.parse(found.newest.position.time) < cutoff) await remove(byLineage.get(found.id) ?? []);
  }
  if (oldest === undefined) return removed;
  const pivot = oldest;
  const kept = await readPosition(destination, pivot.key);
  const named = new Set(kept.position.files.flatMap((file) => file.segments.map((segment) => segment.key)));
  await remove(own.filter((key) => (parsePositionKey(key)?.seq ?? Infinity) < pivot.seq));
  await remove(own.filter((key) => (objectRound(key) ?? Infinity) <= pivot.seq && !named.has(key)));
  return removed;
}
