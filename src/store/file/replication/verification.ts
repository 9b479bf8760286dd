import { ReplicationError, type Destination } from './destinations/destination.js';
import { readHead } from './head.js';
import { describeLineage, forkMessage, newestLineages, readLineages, type Lineage } from './history.js';
import { HEAD_KEY, STORE_KEY, parsePositionKey } from './layout.js';
import { positionKeys, readPosition, readSegment, replicatedStore, type FoundPosition } from './replica.js';

/**
 * Checks every position and object of `destination`: each position's form, its chain to the one
 * before it in its lineage, and every object it names against its checksum (each object read once);
 * that one history is the newest (not a fork), and that the newest lineage still reaches the position
 * the head names (a deleted tail). Another store's lineages (a destination taken over) are said, not
 * checked: retention removes them. Returns what is wrong, one line each; empty when all is intact.
 */
export async function verifyReplicas(destination: Destination, progress: (line: string) => void): Promise<string[]> {
  const store = await replicatedStore(destination);
  const problems: string[] = [];
  const checked = new Set<string>();
  const others = new Set<string>();
  let lineage: string | undefined;
  let previous: FoundPosition | undefined;
  let positions = 0;
  for (const key of await positionKeys(destination)) {
    let found: FoundPosition;
    try {
      found = await readPosition(destination, key);
    } catch (error) {
      if (!(error instanceof ReplicationError)) throw error;
      problems.push(error.message);
      previous = undefined;
      continue;
    }
    const { position } = found;
    if (position.lineage !== lineage) {
      lineage = position.lineage;
      previous = undefined;
    }
    if (position.store !== store) {
      others.add(`${position.lineage} of store ${position.store}`);
      continue;
    }
    positions++;
    const follows =
      previous === undefined || (position.previous === previous.digest && position.seq === previous.position.seq + 1);
    if (previous !== undefined && !follows) {
      problems.push(`${key}: does not follow ${previous.key} (the chain is broken)`);
    }
    for (const segment of position.files.flatMap((file) => file.segments)) {
      if (checked.has(segment.key)) continue;
      checked.add(segment.key);
      try {
        await readSegment(destination, segment.key, segment.sha256, segment.length);
      } catch (error) {
        if (!(error instanceof ReplicationError)) throw error;
        problems.push(`${key}: ${error.message}`);
      }
    }
    previous = found;
  }
  progress(`${destination.name}: store ${store}, ${positions} positions, ${checked.size} objects checked`);
  for (const other of others) {
    progress(
      `lineage ${other}, whose destination this store took over: not checked, removed after the retention window`,
    );
  }
  let lineages: Lineage[];
  try {
    lineages = await readLineages(destination);
  } catch (error) {
    // A newest position that does not read: said above, with the rest of its lineage.
    if (!(error instanceof ReplicationError)) throw error;
    return problems;
  }
  const newest = newestLineages(lineages, store);
  // Every position another store's: restore finds nothing, whatever store.json was changed by.
  if (newest.length === 0 && others.size > 0) {
    problems.push(`${STORE_KEY} names store ${store}, which holds no position here: restore finds nothing to restore`);
  }
  if (newest.length > 1) problems.push(forkMessage(destination.name, newest));
  if (newest.length === 1) progress(`newest history: ${describeLineage(newest[0] as (typeof newest)[number])}`);
  problems.push(...(await headProblems(destination, store, lineages)));
  return problems;
}

/** What the head says that the positions contradict: a newest lineage whose last positions are gone. */
async function headProblems(destination: Destination, store: string, lineages: readonly Lineage[]): Promise<string[]> {
  let head;
  try {
    head = await readHead(destination);
  } catch (error) {
    if (!(error instanceof ReplicationError)) throw error;
    return [error.message];
  }
  if (head === undefined || head.store !== store) return [];
  const named = lineages.find((found) => found.id === head.lineage);
  const last = named === undefined ? 0 : (parsePositionKey(named.keys.at(-1) as string)?.seq ?? 0);
  if (last >= head.seq) return [];
  const found = named === undefined ? 'that lineage holds no position' : `its positions end at ${last}`;
  return [
    `${HEAD_KEY} names position ${head.seq} of lineage ${head.lineage}, but ${found}: ` +
      'the newest positions were deleted',
  ];
}
