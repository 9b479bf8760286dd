import { join } from 'node:path';
import { nodeFileSystem } from '../../../lib/file-system.js';
import { replaceFile } from '../../../lib/replace-file.js';
import { errorCode, reportToStderr } from '../../../lib/system-error.js';
import { ReplicationError, type Destination } from './destination.js';
import { REPLICA_ID_FILE } from './durable-files.js';
import { STORE_KEY, newStoreId } from './layout.js';

const STORE_ID = /^[0-9a-f]{32}$/;

/** Reads a `{"store": "<id>"}` document, or undefined when it is not one. */
export function parseStoreId(bytes: Buffer): string | undefined {
  try {
    const value = JSON.parse(bytes.toString('utf8')) as { store?: unknown };
    return typeof value.store === 'string' && STORE_ID.test(value.store) ? value.store : undefined;
  } catch {
    return undefined; // not JSON: said by the caller as "not a store id"
  }
}

export const storeIdDocument = (store: string): Buffer => Buffer.from(`${JSON.stringify({ store })}\n`);

/**
 * The id of the store in `dataDir`, made on its first replication and kept in replication.json there.
 * A restore writes the id of the store it restores, so the restored store goes on in the same place;
 * a backup or a repair leaves it out, and the copy is a store of its own.
 */
export async function localStoreId(dataDir: string): Promise<string> {
  const path = join(dataDir, REPLICA_ID_FILE);
  try {
    const id = parseStoreId(await nodeFileSystem.readFile(path));
    if (id === undefined) throw new ReplicationError('damaged', `${path} does not hold a store id; remove it to replicate as a new store`);
    return id;
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  const id = newStoreId();
  await writeStoreId(dataDir, id);
  return id;
}

export async function writeStoreId(dataDir: string, store: string): Promise<void> {
  await replaceFile(nodeFileSystem, join(dataDir, REPLICA_ID_FILE), [storeIdDocument(store)], reportToStderr);
}

/**
 * Makes sure the destination is this store's: one holding nothing is claimed (store.json written,
 * which also proves it takes writes); one holding another store's replicas is refused, unless its
 * id is given to take it over, so that two servers never write their histories into one place.
 */
export async function claimDestination(destination: Destination, store: string, takeOver: string | undefined): Promise<void> {
  const found = await destination.get(STORE_KEY);
  const owner = found === undefined ? undefined : parseStoreId(found);
  if (found !== undefined && owner === undefined) {
    throw new ReplicationError('damaged', `${destination.name} holds a ${STORE_KEY} that is not a store id; give a destination of its own to this store`);
  }
  if (owner === store) return;
  if (owner !== undefined && owner !== takeOver) {
    throw new ReplicationError('refused', `${destination.name} holds the replicas of another store (${owner}); give this store a destination of its own, `
      + `or restore from it ("restore <new-dir> --from ${destination.name}"), or to make it this store's: --replicate-take-over ${owner}`);
  }
  await destination.put(STORE_KEY, storeIdDocument(store));
}
