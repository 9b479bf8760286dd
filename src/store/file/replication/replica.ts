import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ReplicationError, type Destination } from './destinations/destination.js';
import { LINEAGES, STORE_KEY, parsePosition, parsePositionKey, sha256, type Position } from './layout.js';
import { parseStoreId } from './store-id.js';

/** A position as found at the destination, with the checksum of its text (what the next one's `previous` holds). */
export interface FoundPosition {
  key: string;
  position: Position;
  digest: string;
}

/** The store whose replicas `destination` holds; refuses one that holds none. */
export async function replicatedStore(destination: Destination): Promise<string> {
  const bytes = await destination.get(STORE_KEY);
  const store = bytes === undefined ? undefined : parseStoreId(bytes);
  if (store === undefined)
    throw new ReplicationError(
      'not_found',
      `${destination.name} holds no replicas (no ${STORE_KEY} with a store id); is --from right?`,
    );
  return store;
}

/** The keys of every position, oldest lineage first and in round order within each. */
export async function positionKeys(destination: Destination): Promise<string[]> {
  const keys = (await destination.list(LINEAGES)).filter((key) => parsePositionKey(key) !== undefined);
  return keys.sort();
}

export async function readPosition(destination: Destination, key: string): Promise<FoundPosition> {
  const bytes = await destination.get(key);
  if (bytes === undefined) throw new ReplicationError('not_found', `${key} went while it was read`);
  try {
    return { key, position: parsePosition(bytes.toString('utf8'), key), digest: sha256(bytes) };
  } catch (error) {
    throw new ReplicationError('damaged', error instanceof SyntaxError ? `${key}: not JSON` : (error as Error).message);
  }
}

/** An object's bytes, checked against the checksum its position gives. */
export async function readSegment(
  destination: Destination,
  key: string,
  digest: string,
  length: number,
): Promise<Buffer> {
  const bytes = await destination.get(key, length);
  if (bytes === undefined) throw new ReplicationError('not_found', `${key} is missing`);
  if (bytes.length !== length || sha256(bytes) !== digest)
    throw new ReplicationError('damaged', `${key} does not match its checksum`);
  return bytes;
}

/** Writes every file of `position` into `dir` (which exists and is empty), each checked object by object. */
export async function layOut(destination: Destination, position: Position, dir: string): Promise<void> {
  for (const file of position.files) {
    const parts: Buffer[] = [];
    for (const segment of file.segments)
      parts.push(await readSegment(destination, segment.key, segment.sha256, segment.length));
    await writeFile(join(dir, file.name), Buffer.concat(parts), { mode: 0o600, flag: 'wx' });
  }
}
