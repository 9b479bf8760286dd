import { ReplicationError, type Destination } from './destinations/destination.js';
import { describeLineage, forkMessage, newestLineages, readLineages, type Lineage } from './history.js';
import type { PositionRef } from './layout.js';
import type { LocalRecord } from './store-id.js';

/** Where a new lineage stands in its store's history: the position it continues from, and its generation. */
export interface Succession {
  generation: number;
  parent: PositionRef | null;
}

const refOf = (lineage: Lineage): PositionRef => ({ lineage: lineage.id, seq: lineage.newest.position.seq });

/**
 * Which history a starting server's new lineage continues. The newest history at the destination is
 * continued only by the directory that wrote it (same lineage, same directory): a restored or copied
 * directory, or an old one that another server of the store has replicated past, is refused, since
 * its lineage would hide the newer history from every restore. `takingOver` (--replicate-take-over)
 * makes the new lineage the newest anyway: a generation above every one there.
 */
export async function succession(
  destination: Destination,
  record: LocalRecord,
  home: string,
  takingOver: boolean,
  holds: (id: number) => boolean,
): Promise<Succession> {
  const lineages = (await readLineages(destination)).filter((lineage) => lineage.store === record.store);
  const top = Math.max(0, ...lineages.map((lineage) => lineage.generation));
  const newest = newestLineages(lineages, record.store);
  const head = newest[0];
  if (head === undefined) return { generation: top + 1, parent: null };
  if (takingOver) {
    return { generation: top + 1, parent: record.restoredFrom ?? (newest.length === 1 ? refOf(head) : null) };
  }
  const takeOver = `--replicate-take-over ${record.store}`;
  if (newest.length > 1) {
    throw new ReplicationError('refused', `${forkMessage(destination.name, newest)}, or start with ${takeOver}`);
  }
  // The same directory put back from an older copy (a snapshot taken while it ran) names the same lineage.
  const same = record.home === home && (head.id === record.lineage || head.id === record.parent);
  const committed = head.newest.position.committedAtLeast;
  const older = same && committed > 0 && !holds(committed);
  const ours = same && !older;
  // A directory that replicated before lineages had generations has no lineage in its record.
  const legacy = record.lineage === undefined && record.restoredFrom === undefined && head.generation === 0;
  if (ours || legacy) return { generation: head.generation + 1, parent: refOf(head) };
  const from = record.restoredFrom;
  const why =
    from !== undefined
      ? `this directory was restored from it (lineage ${from.lineage}, position ${from.seq})`
      : older
        ? `its newest position holds pet ${committed}, which this directory does not: it is an older copy`
        : record.home !== home
          ? 'this directory is a copy of the one that replicated there'
          : 'another server of this store has replicated there since this directory last did';
  throw new ReplicationError(
    'refused',
    `${destination.name} holds a newer history of this store than this data ` +
      `directory: ${describeLineage(head)}; ${why}. Replicating from here would hide it from every restore: to make ` +
      `this directory's history the newest there, start with ${takeOver}; ` +
      'for a restore drill, start without --replicate-to',
  );
}
