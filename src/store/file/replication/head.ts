import { ReplicationError, type Destination } from './destinations/destination.js';
import { HEAD_KEY } from './layout.js';
import { replicatedStore } from './replica.js';

/**
 * The destination's head: the newest position written, put after that position. A server reads it
 * before each round to learn whether a newer history has begun there (it is then superseded), and
 * `verify --from` compares it with the positions found, so that a deleted tail of the newest lineage
 * is noticed while the head is there.
 */
export interface Head {
  store: string;
  lineage: string;
  seq: number;
  generation: number;
}

export const headDocument = (head: Head): Buffer => Buffer.from(`${JSON.stringify(head)}\n`);

/** The head, undefined when there is none; a head that is not one is refused as damaged. */
export async function readHead(destination: Destination): Promise<Head | undefined> {
  const bytes = await destination.get(HEAD_KEY);
  if (bytes === undefined) return undefined;
  let value: Partial<Head>;
  try {
    value = JSON.parse(bytes.toString('utf8')) as Partial<Head>;
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    throw new ReplicationError('damaged', `${HEAD_KEY}: not JSON`);
  }
  const { store, lineage, seq, generation } = value;
  const counts = Number.isSafeInteger(seq) && Number.isSafeInteger(generation);
  if (typeof store !== 'string' || typeof lineage !== 'string' || !counts) {
    throw new ReplicationError('damaged', `${HEAD_KEY}: not a head (store, lineage, seq, generation)`);
  }
  return { store, lineage, seq: seq as number, generation: generation as number };
}

/**
 * The head of a history that supersedes the lineage `own`, or undefined when `own` may go on: a later
 * position of `own`'s lineage than it wrote, a lineage of its store of the same or a higher generation,
 * or another store's once that store has taken the destination over (store.json; before its first
 * position the head is still the old one's).
 */
export async function supersedingHead(destination: Destination, own: Head): Promise<Head | undefined> {
  const head = await readHead(destination);
  if (head === undefined) return undefined;
  // Its own lineage past its own newest position: a twin of this server (resumed from a snapshot) went on.
  if (head.lineage === own.lineage) return head.seq > own.seq ? head : undefined;
  if (head.store === own.store) return head.generation >= own.generation ? head : undefined;
  return (await replicatedStore(destination)) === own.store ? undefined : head;
}
