import { ReplicationError, type Destination } from './destinations/destination.js';
import { parsePositionKey, type PositionRef } from './layout.js';
import { positionKeys, readPosition, type FoundPosition } from './replica.js';

/** One lineage found at a destination: its positions' keys in round order and the newest that reads. */
export interface Lineage {
  id: string;
  store: string;
  generation: number;
  parent: PositionRef | null;
  keys: string[];
  newest: FoundPosition;
}

/**
 * Every lineage at the destination that holds a position, each summed up by its newest position (a
 * lineage's generation and parent are in each of its positions): one read per lineage. A newest
 * position that does not read (damaged, forged, sealed with a key not given) is refused, naming it:
 * which history is the newest cannot be told without it.
 */
export async function readLineages(destination: Destination): Promise<Lineage[]> {
  const byLineage = new Map<string, string[]>();
  for (const key of await positionKeys(destination)) {
    const id = parsePositionKey(key)?.lineage as string;
    byLineage.set(id, [...(byLineage.get(id) ?? []), key]);
  }
  const lineages: Lineage[] = [];
  for (const [id, keys] of byLineage) {
    const newest = await readPosition(destination, keys.at(-1) as string);
    const { store, generation, parent } = newest.position;
    lineages.push({ id, store, generation, parent, keys, newest });
  }
  return lineages;
}

/**
 * The lineages of `store` that claim to be its newest history: those of the highest generation.
 * More than one is a fork. Lineages of format 1 (generation 0) knew no better than their names' order.
 */
export function newestLineages(lineages: readonly Lineage[], store: string): Lineage[] {
  const own = lineages.filter((lineage) => lineage.store === store);
  const top = Math.max(...own.map((lineage) => lineage.generation));
  const newest = own.filter((lineage) => lineage.generation === top);
  return top === 0 ? newest.sort((a, b) => (a.id < b.id ? -1 : 1)).slice(-1) : newest;
}

/** How a lineage is named in messages. */
export function describeLineage(lineage: Lineage): string {
  const { seq, time } = lineage.newest.position;
  return `lineage ${lineage.id} (generation ${lineage.generation}, newest position ${seq} of ${time})`;
}

/**
 * The lineage a restore takes: `chosen` when given, else the newest history; refuses a fork, naming
 * both (or all) histories that claim to be newest, and a destination with no position of `store`.
 */
export function chooseLineage(lineages: readonly Lineage[], store: string, name: string, chosen?: string): Lineage {
  if (chosen !== undefined) {
    const found = lineages.find((lineage) => lineage.id === chosen && lineage.store === store);
    if (found === undefined) {
      throw new ReplicationError('not_found', `${name} holds no lineage ${chosen} of store ${store}`);
    }
    return found;
  }
  const newest = newestLineages(lineages, store);
  if (newest.length === 0) {
    throw new ReplicationError('not_found', `${name} holds no position yet: nothing was replicated`);
  }
  if (newest.length > 1) throw new ReplicationError('damaged', forkMessage(name, newest));
  return newest[0] as Lineage;
}

export const forkMessage = (name: string, newest: readonly Lineage[]): string =>
  `${name} holds ` +
  `${newest.length} histories that each claim to be the newest (a fork): ${newest.map(describeLineage).join('; ')}; ` +
  'choose one with --lineage <id>';

/**
 * The positions of `lineage`'s history, oldest first: those of the lineage it continues from up to
 * the position it continued from (and so on back), then its own. Ancestors retention removed end it.
 */
export function historyKeys(lineage: Lineage, lineages: readonly Lineage[]): string[] {
  const parts: string[][] = [lineage.keys];
  const seen = new Set([lineage.id]);
  let parent = lineage.parent;
  while (parent !== null && !seen.has(parent.lineage)) {
    const { seq } = parent;
    const found = lineages.find((candidate) => candidate.id === (parent as PositionRef).lineage);
    if (found === undefined || found.store !== lineage.store) break;
    seen.add(found.id);
    parts.unshift(found.keys.filter((key) => (parsePositionKey(key)?.seq ?? Infinity) <= seq));
    parent = found.parent;
  }
  return parts.flat();
}
