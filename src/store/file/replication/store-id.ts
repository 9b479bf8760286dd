import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { nodeFileSystem } from '../../../lib/file-system.js';
import { replaceFile } from '../../../lib/replace-file.js';
import { errorCode, reportToStderr } from '../../../lib/system-error.js';
import { ReplicationError, type Destination } from './destinations/destination.js';
import { REPLICA_ID_FILE } from './durable-files.js';
import { STORE_KEY, newStoreId, type PositionRef } from './layout.js';

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
 * What the data directory knows of its replication, in replication.json: the store's id; the
 * lineage it last began, the lineage that one continued from, and the directory it began in (its
 * inode: a copy has another); or, after a restore, the position it was restored from. A start
 * continues the destination's newest history only from the directory that wrote it (succession.ts).
 */
export interface LocalRecord {
  store: string;
  lineage?: string;
  parent?: string | undefined;
  home?: string;
  restoredFrom?: PositionRef;
}

/** The record of `dataDir`, with a new store id made and written on its first replication. */
export async function localRecord(dataDir: string): Promise<LocalRecord> {
  const path = join(dataDir, REPLICA_ID_FILE);
  try {
    const bytes = await nodeFileSystem.readFile(path);
    const store = parseStoreId(bytes);
    if (store === undefined)
      throw new ReplicationError('damaged', `${path} does not hold a store id; remove it to replicate as a new store`);
    const { lineage, parent, home, restoredFrom } = JSON.parse(bytes.toString('utf8')) as Partial<LocalRecord>;
    return {
      store,
      ...(typeof lineage === 'string' && typeof home === 'string' ? { lineage, parent, home } : {}),
      ...(typeof restoredFrom?.lineage === 'string' ? { restoredFrom } : {}),
    };
  } catch (error) {
    if (errorCode(error) !== 'ENOENT') throw error;
  }
  const record = { store: newStoreId() };
  await writeLocalRecord(dataDir, record);
  return record;
}

/** The identity of the directory itself, which a copy (cp -a, a restore, rsync) does not keep. */
export const directoryHome = async (dataDir: string): Promise<string> =>
  String((await stat(dataDir, { bigint: true })).ino);

export async function writeLocalRecord(dataDir: string, record: LocalRecord): Promise<void> {
  const text = Buffer.from(`${JSON.stringify(record)}\n`);
  await replaceFile(nodeFileSystem, join(dataDir, REPLICA_ID_FILE), [text], reportToStderr);
}

/**
 * Makes sure the destination is this store's: one holding nothing is claimed (store.json written,
 * which also proves it takes writes); one holding another store's replicas is refused, unless its
 * id is given to take it over, so that two servers never write their histories into one place.
 * Returns whether another store's destination was taken over.
 */
export async function claimDestination(
  destination: Destination,
  store: string,
  takeOver: string | undefined,
): Promise<boolean> {
  const found = await destination.get(STORE_KEY);
  const owner = found === undefined ? undefined : parseStoreId(found);
  if (found !== undefined && owner === undefined) {
    throw new ReplicationError(
      'damaged',
      `${destination.name} holds a ${STORE_KEY} that is not a store id; give a destination of its own to this store`,
    );
  }
  if (owner === store) return false;
  if (owner !== undefined && owner !== takeOver) {
    throw new ReplicationError(
      'refused',
      `${destination.name} holds the replicas of another store (${owner}); give this store a destination of its own, ` +
        `or restore from it ("restore <new-dir> --from ${destination.name}"), or to make it this store's: ` +
        `--replicate-take-over ${owner}`,
    );
  }
  await destination.put(STORE_KEY, storeIdDocument(store));
  return owner !== undefined;
}
