import type { ServiceLogger } from '../lib/logger.js';
import { DEFAULTS, type SettingOptions } from './settings.js';
import type { FileStore } from '../store/file/file-store.js';
import { openDestination } from '../store/file/replication/destinations/open-destination.js';
import { keyIdText, readReplicaKeys } from '../store/file/replication/destinations/replica-keys.js';
import { Replicator } from '../store/file/replication/replicator.js';
import { SealedDestination } from '../store/file/replication/destinations/sealed-destination.js';

/** How replication runs (settings of the command line too, in settings.ts); `replicateTo` is where to. */
export interface ReplicationOptions
  extends SettingOptions<'replicateInterval' | 'replicateTakeOver' | 'replicateRetention' | 'replicateKeyFile'> {
  replicateTo: string;
  /** Milliseconds a stop gives replication's round under way and its last one (--shutdown-timeout). */
  shutdownTimeout?: number | undefined;
}

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
    intervalMs: (options.replicateInterval ?? DEFAULTS.replicateInterval) * 1000,
    retentionMs: (options.replicateRetention ?? DEFAULTS.replicateRetention) * 1000,
    stopMs: options.shutdownTimeout,
  });
  logger.info('replicating', {
    destination: destination.name,
    lineage: replicator.lineage,
    intervalSeconds: options.replicateInterval ?? DEFAULTS.replicateInterval,
    sealedWith: keys[0] === undefined ? undefined : keyIdText(keys[0]),
  });
  return replicator;
}
