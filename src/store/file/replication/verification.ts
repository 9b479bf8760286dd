import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import type { FileSystem } from '../../../lib/file-system.js';
import { StoreDamagedError, describeDamage } from '../damage.js';
import { StoreOpenError } from '../../store.js';
import { ReplicationError, type Destination } from './destinations/destination.js';
import { KeyRefused } from './destinations/sealed-destination.js';
import { readHead } from './head.js';
import { describeLineage, forkMessage, newestLineages, readLineages, type Lineage } from './history.js';
import { HEAD_KEY, STORE_KEY, parsePositionKey } from './layout.js';
import { positionKeys, readPosition, readSegment, replicatedStore, type FoundPosition } from './replica.js';
import { readRestorable } from './restorable.js';

/**
 * Checks every position and object of `destination`: each position's form, its chain to the one
 * before it in its lineage, every object it names against its checksum (each object read once), and,
 * when those hold, its files laid out and read as `restore` reads them (restorable.ts); that one
 * history is the newest (not a fork), and that the newest lineage still reaches the position the head
 * names (a deleted tail). Another store's lineages (a destination taken over) are said, not checked:
 * retention removes them. Returns what is wrong, one line each; empty when all is intact.
 */
export async function verifyReplicas(
  fs: FileSystem,
  destination: Destination,
  progress: (line: string) => void,
): Promise<string[]> {
  const store = await replicatedStore(destination);
  const scratch = await mkdtemp(join(tmpdir(), 'petstore-verify-'));
  try {
    return await verifyIn(fs, destination, store, scratch, progress);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

async function verifyIn(
  fs: FileSystem,
  destination: Destination,
  store: string,
  scratch: string,
  progress: (line: string) => void,
): Promise<string[]> {
  const problems: string[] = [];
  const checked = new Set<string>();
  /** Objects found missing or damaged: a position naming one is said to be damaged, and not laid out. */
  const bad = new Set<string>();
  const others = new Set<string>();
  /** Positions the key file given does not open, by what is wrong with it: said once, not once per position. */
  const unopened = new Map<string, string[]>();
  let lineage: string | undefined;
  let previous: FoundPosition | undefined;
  let positions = 0;
  for (const key of await positionKeys(destination)) {
    let found: FoundPosition;
    try {
      found = await readPosition(destination, key);
    } catch (error) {
      if (!(error instanceof ReplicationError)) throw error;
      if (error instanceof KeyRefused) unopened.set(error.what, [...(unopened.get(error.what) ?? []), key]);
      else problems.push(error.message);
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
    const segments = position.files.flatMap((file) => file.segments);
    for (const segment of segments) {
      if (checked.has(segment.key)) continue;
      checked.add(segment.key);
      try {
        await readSegment(destination, segment.key, segment.sha256, segment.length);
      } catch (error) {
        if (!(error instanceof ReplicationError)) throw error;
        bad.add(segment.key);
        problems.push(`${key}: ${error.message}`);
      }
    }
    // Objects intact: whether restore would take the files they make is the next question.
    if (!segments.some((segment) => bad.has(segment.key))) {
      problems.push(...(await restoreProblems(fs, destination, found, scratch, progress)));
    }
    previous = found;
  }
  progress(`${destination.name}: store ${store}, ${positions} positions, ${checked.size} objects checked`);
  for (const [what, keys] of unopened) {
    if (keys.length === 1) problems.push(`${keys[0]} is ${what}`);
    else
      problems.push(
        `${keys.length} positions are ${what.replace(' it was ', ' they were ')} (${keys[0]} to ${keys.at(-1)})`,
      );
  }
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

/** What restore would refuse in `found`'s files, read in a directory of `scratch` that is removed after. */
async function restoreProblems(
  fs: FileSystem,
  destination: Destination,
  { key, position }: FoundPosition,
  scratch: string,
  progress: (line: string) => void,
): Promise<string[]> {
  const dir = join(scratch, `${position.lineage}-${position.seq}`);
  await fs.mkdir(dir);
  try {
    const { setBack } = await readRestorable(fs, destination, position, dir);
    if (setBack > 0) {
      progress(
        `${key}: ${setBack} journal ${setBack === 1 ? 'line repeats or precedes' : 'lines repeat or precede'} ` +
          'pets of its pets.json (shipped by a build before the compaction fix): restore sets them back in id order',
      );
    }
    return [];
  } catch (error) {
    if (error instanceof StoreDamagedError) {
      return error.damage.map((d) => `${key}: restore refuses it: ${describeDamage({ ...d, file: basename(d.file) })}`);
    }
    if (error instanceof StoreOpenError) return [`${key}: restore refuses it: ${error.message.replaceAll(dir, '.')}`];
    throw error;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
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
