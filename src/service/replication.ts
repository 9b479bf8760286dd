import type { ServiceLogger } from '../lib/logger.js';
import type { FileStore } from '../store/file/file-store.js';
import { openDestination } from '../store/file/replication/destinations/open-destination.js';
import { keyIdText, readReplicaKeys } from '../store/file/replication/destinations/replica-keys.js';
import { Replicator } from '../store/file/replication/replicator.js';
import { SealedDestination } from '../store/file/replication/destinations/sealed-destination.js';

export interface ReplicationOptions {
  /** A directory or s3://bucket/prefix (--replicate-to) to keep a continuous copy of the data directory in. */
  replicateTo: string;
  /** Seconds between rounds (default 1). */
  replicateInterval?: number | undefined;
  /** The store id of another store whose destination this one may take over. */
  replicateTakeOver?: string | undefined;
  /** Seconds back that a restore may reach (default 86400, a day); older positions and lineages are removed. */
  replicateRetention?: number | undefined;
  /** A file of keys (replica-keys.ts): every object is sealed under its first key. */
  replicateKeyFile?: string | undefined;
  /** Milliseconds a stop gives replication's round under way and its last one (--shutdown-timeout). */
  shutdownTimeout?: number | undefined;
}

export const DEFAULT_REPLICATE_INTERVAL = 1;
export const DEFAULT_REPLICATE_RETENTION = 86_400;

/** Starts replicating the file store in `dataDir`; refuses the start when the destination cannot be used. */
export async function startReplication(
  store: FileStore,
  dataDir: string,
  options: ReplicationOptions,
  logger: ServiceLogger,
): Promise<Replicator> {
  const warn = (message: string): void => logger.warn(message);
  const keys = options.replicateKeyFile === undefined ? [] : await readReplicaKeys(options.replicateKeyFile);
  const destination = new SealedDestination(await openDestination(options.replicateTo, dataDir, { warn }), keys);
  const replicator = await Replicator.start({
    dataDir,
    store,
    destination,
    logger,
    takeOver: options.replicateTakeOver,
    intervalMs: (options.replicateInterval ?? DEFAULT_REPLICATE_INTERVAL) * 1000,
    retentionMs: (options.replicateRetention ?? DEFAULT_REPLICATE_RETENTION) * 1000,
    stopMs: options.shutdownTimeout,
  });
  logger.info('replicating', {
    destination: destination.name,
    lineage: replicator.lineage,
    intervalSeconds: options.replicateInterval ?? DEFAULT_REPLICATE_INTERVAL,
    sealedWith: keys[0] === undefined ? undefined : keyIdText(keys[0]),
  });
  return replicator;
}
