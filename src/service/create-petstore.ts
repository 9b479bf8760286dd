import { AuthLimiter } from '../auth/limiter.js';
import { checkQuota, QuotaCounter } from '../auth/quota.js';
import { createApp, type RequestListener } from '../http/app.js';
import { WriteBatch } from '../http/connections/write-batch.js';
import { corsPolicy } from '../http/pipeline/cors.js';
import { trustedProxies } from '../http/access/client-address.js';
import { Feed } from '../http/feed/feed.js';
import { createMount, type Mount } from '../http/mount.js';
import { generateFirstKey, keyFilePath } from '../auth/key-file.js';
import { logKeyChanges, logKeyDuplicates } from '../auth/key-log.js';
import { Keyring } from '../auth/keyring.js';
import { jsonLogger, serviceLogger, type Logger, type ServiceLogger } from '../lib/logger.js';
import { FileStore } from '../store/file/file-store.js';
import type { PetStore } from '../store/store.js';
import type { Replicator } from '../store/file/replication/replicator.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import { DEFAULTS, type SettingOptions } from './settings.js';
import { watchWebhooks, type WebhookOptions, type Webhooks } from './webhooks.js';

/**
 * The options of a service. Those that are settings of the command line too (bodyLimit, corsOrigin, maxStreams…)
 * are declared in settings.ts, with their defaults and what they mean; `dataDir` is required unless `store` is given
 * (the command line's ./data is no embedder's default).
 */
export interface PetstoreOptions
  extends WebhookOptions,
    SettingOptions<
      | 'dataDir'
      | 'databaseUrl'
      | 'databasePool'
      | 'databaseReads'
      | 'rateLimit'
      | 'bodyLimit'
      | 'authFailureLimit'
      | 'corsOrigin'
      | 'trustProxy'
      | 'docs'
      | 'basePath'
      | 'idempotencyWindow'
      | 'idempotencyKeyLimit'
      | 'maxStreams'
      | 'maxStreamsPerKey'
      | 'streamLifetime'
      | 'streamHeartbeat'
      | 'publicUrls'
      | 'replicateTo'
      | 'replicateInterval'
      | 'replicateTakeOver'
      | 'replicateRetention'
      | 'replicateKeyFile'
      | 'shutdownTimeout'
    > {
  /** A store of the embedder's own instead of the file store in `dataDir`. */
  store?: PetStore;
  /**
   * API keys accepted besides those in `<dataDir>/keys.json`; only their SHA-256 hashes are kept. A key
   * holds every scope, or only those after a ':' (`key:pets:read`; several joined by '+'). Each key
   * once, and not also in keys.json: a DuplicateKeyError otherwise.
   */
  keys?: readonly string[];
  logger?: Logger;
  /**
   * Measure requests, the store and the process for `metrics()` (Prometheus text); off by default,
   * and then requests pay nothing for them.
   */
  metrics?: boolean | undefined;
  /**
   * Called with a newly generated key when no key is configured anywhere (no `keys`, no key file in
   * `dataDir`): the key is shown once and only its hash is kept. Without it, no key is generated.
   */
  onKeyGenerated?: (key: string) => void;
}

export interface PetstoreService {
  /** A standard `(req, res)` listener; given `next`, unknown paths are passed on instead of a 404. */
  handler: RequestListener;
  store: PetStore;
  /**
   * The metrics in the Prometheus text format 0.0.4, read now; rejects with a TypeError when the
   * service was made without `metrics: true`.
   */
  metrics(): Promise<string>;
  /**
   * Ends every event stream and answers every waiting request (an empty page) now, and refuses new
   * ones: the first step of a stop, as `listen` takes it (an open stream ends by itself only after streamLifetime).
   */
  closeStreams(): void;
  /** Closes the streams, then the store (pending writes finish, the data is left compacted). */
  close(): Promise<void>;
}
/** @deprecated The old name of PetstoreService, one letter away from the storage interface PetStore; kept for 1.x. */
export type Petstore = PetstoreService;

/**
 * Creates the service: opens the store, loads the keys, returns the request listener. No key, no
 * entry: with no key configured every request under /v1 is refused (fail closed).
 */
export async function createPetstore(options: PetstoreOptions): Promise<PetstoreService> {
  const { serving, answers, ...petstore } = await openPetstore(
    options,
    options.metrics === true ? await loadMetrics() : undefined,
  );
  serving();
  return petstore;
}

/** A service not yet serving: `serving()` says it now does (replication begins its lineage then, replicator.ts). */
export interface OpenedPetstore extends PetstoreService {
  serving(): void;
  /** Where the service holds its answers for the turn's end: the server writes them before an error answer. */
  answers: WriteBatch;
}

/** The metrics of one service; the module, and perf_hooks with it, is loaded only when metrics are on. */
export async function loadMetrics(): Promise<ServiceMetrics> {
  return new (await import('./metrics/service-metrics.js')).ServiceMetrics();
}

/** createPetstore, measured with `metrics` (which `listen` also gives its server's), or unmeasured. */
export async function openPetstore(
  options: PetstoreOptions,
  metrics: ServiceMetrics | undefined,
): Promise<OpenedPetstore> {
  const logger = serviceLogger(options.logger ?? jsonLogger());
  const mount = createMount(options.basePath, options.publicUrls, options.docs ?? DEFAULTS.docs);
  checkOptions(options);
  if (options.databaseUrl !== undefined && options.store === undefined) {
    return openOnDatabase(options, options.databaseUrl, logger, mount, metrics);
  }
  const opened = options.store ?? (await openFileStore(options, logger));
  // What was started beside the store, stopped before it.
  const started: { replicator?: Replicator | undefined; webhooks?: Webhooks | undefined } = {};
  const closeStore = async (): Promise<void> => {
    await started.webhooks?.stop();
    await started.replicator?.stop();
    await opened.close();
  };
  let keyring: Keyring;
  try {
    await offerFirstKey(options);
    keyring = openKeyring(options, logger);
    started.replicator = await replicateIfAsked(opened, options, logger, metrics);
    started.webhooks = await deliverWebhooks(opened, options, logger, metrics);
  } catch (error) {
    await closeStore();
    throw error;
  }
  return {
    ...service(opened, keyring, options, logger, closeStore, mount, metrics),
    serving: () => started.replicator?.begin(),
  };
}

/** Options that contradict each other, or a store that is not one, refuse before anything is opened. */
function checkOptions(options: PetstoreOptions): void {
  if (options.store !== undefined) checkStore(options.store);
  if (options.rateLimit !== undefined) checkQuota(options.rateLimit);
  if (
    options.replicateTo !== undefined &&
    (options.store !== undefined || options.databaseUrl !== undefined || options.dataDir === undefined)
  ) {
    throw new TypeError(
      'replicateTo replicates the file store in dataDir; a database or a store of your own keeps its copies itself',
    );
  }
}

/** The service over PostgreSQL: store, keys and webhooks in the database (loaded only then). */
async function openOnDatabase(
  options: PetstoreOptions,
  databaseUrl: string,
  logger: ServiceLogger,
  mount: Mount,
  metrics: ServiceMetrics | undefined,
): Promise<OpenedPetstore> {
  const { openDatabase } = await import('./database.js');
  const database = await openDatabase(
    {
      ...options,
      databaseUrl,
      databasePool: options.databasePool ?? DEFAULTS.databasePool,
      idempotencyWindow: options.idempotencyWindow ?? DEFAULTS.idempotencyWindow,
    },
    logger,
  );
  metrics?.watchWebhooks(database.webhooks);
  return {
    ...service(database.store, database.keyring, options, logger, database.close, mount, metrics),
    serving: () => {},
  };
}

/** The durable file store in `dataDir`. */
function openFileStore(options: PetstoreOptions, logger: ServiceLogger): Promise<FileStore> {
  if (options.dataDir === undefined) throw new TypeError('createPetstore needs a dataDir or a store');
  return FileStore.open(options.dataDir, {
    idempotencyWindowMs: (options.idempotencyWindow ?? DEFAULTS.idempotencyWindow) * 1000,
    idempotencyKeyLimit: options.idempotencyKeyLimit ?? DEFAULTS.idempotencyKeyLimit,
    onBackgroundError: (error) =>
      logger.error('background compaction failed; the journal still holds every pet', error),
    onRepair: (message) => logger.info(message),
  });
}

/**
 * With no key configured anywhere, one is generated and handed to `onKeyGenerated`. After the store is open:
 * its directory lock keeps two first starts from generating two keys.
 */
async function offerFirstKey(options: PetstoreOptions): Promise<void> {
  if (options.dataDir === undefined || options.onKeyGenerated === undefined || (options.keys ?? []).length > 0) return;
  const generated = await generateFirstKey(options.dataDir);
  if (generated !== undefined) options.onKeyGenerated(generated);
}

/** The keys given and those of the key file, whose changes are logged. */
function openKeyring(options: PetstoreOptions, logger: ServiceLogger): Keyring {
  return new Keyring({
    keys: options.keys ?? [],
    keyFile: options.dataDir === undefined ? undefined : keyFilePath(options.dataDir),
    onReloadError: (error) => logger.error('cannot reload the key file; the previous keys stay in force', error),
    onChange: logKeyChanges(logger),
    onDuplicate: logKeyDuplicates(logger),
  });
}

/** Replication of the file store, with `replicateTo`; loaded only then: an embedder without it carries none of it. */
async function replicateIfAsked(
  store: PetStore,
  options: PetstoreOptions,
  logger: ServiceLogger,
  metrics: ServiceMetrics | undefined,
): Promise<Replicator | undefined> {
  if (options.replicateTo === undefined || !(store instanceof FileStore)) return undefined;
  const { startReplication } = await import('./replication.js');
  const replicator = await startReplication(
    store,
    options.dataDir as string,
    { ...options, replicateTo: options.replicateTo },
    logger,
  );
  metrics?.watchReplication(replicator);
  return replicator;
}

/** The webhooks of `dataDir`'s subscriptions, measured. */
async function deliverWebhooks(
  store: PetStore,
  options: PetstoreOptions,
  logger: ServiceLogger,
  metrics: ServiceMetrics | undefined,
): Promise<Webhooks | undefined> {
  if (options.dataDir === undefined) return undefined;
  const webhooks = await watchWebhooks(store, options.dataDir, options, logger);
  // Registered now, empty until delivery starts: families are made once, with the service's metrics.
  metrics?.watchWebhooks(webhooks);
  return webhooks;
}

function service(
  store: PetStore,
  keyring: Keyring,
  options: PetstoreOptions,
  logger: Logger,
  closeStore: () => Promise<void>,
  mount: Mount,
  metrics: ServiceMetrics | undefined,
): PetstoreService & { answers: WriteBatch } {
  const maxHeld = options.maxStreams ?? DEFAULTS.maxStreams;
  const maxHeldPerKey = options.maxStreamsPerKey ?? DEFAULTS.maxStreamsPerKey;
  // Allowed, for one key serving everyone, but then the per-key bound protects no other key: said once.
  if (maxHeldPerKey >= maxHeld) {
    logger.error(
      '--max-streams-per-key is not below --max-streams: one API key can hold every event stream and waiting request',
      undefined,
      { maxStreams: maxHeld, maxStreamsPerKey: maxHeldPerKey },
    );
  }
  const feed = new Feed(store, {
    maxHeld,
    maxHeldPerKey,
    heartbeatMs: (options.streamHeartbeat ?? DEFAULTS.streamHeartbeat) * 1000,
    streamLifetimeMs: (options.streamLifetime ?? DEFAULTS.streamLifetime) * 1000,
    checkKeys: () => keyring.refresh(),
    logger,
  });
  // A revoked key's streams and waits end with it (feed.ts), on a key file as in a database.
  keyring.onRemoved((removed) => feed.revoke(removed));
  const answers = new WriteBatch();
  const handler = createApp({
    batch: answers,
    store,
    feed,
    keyring,
    limiter: new AuthLimiter(options.authFailureLimit ?? DEFAULTS.authFailureLimit),
    bodyLimit: options.bodyLimit ?? DEFAULTS.bodyLimit,
    logger,
    cors: corsPolicy(options.corsOrigin),
    trustProxy: options.trustProxy === undefined ? undefined : trustedProxies(options.trustProxy),
    mount,
    metrics: metrics?.attach(store, mount, feed),
    quotas: { counter: new QuotaCounter(), policy: options.rateLimit },
  });
  const close = async (): Promise<void> => {
    feed.close();
    try {
      metrics?.close();
      await closeStore();
    } finally {
      // After the answers feed.close() made (write-batch.ts).
      await new Promise<void>((resolve) => setImmediate(resolve));
      logger.flush?.();
    }
  };
  const exposition = (): Promise<string> =>
    metrics?.expose() ?? Promise.reject(new TypeError('metrics are off: create the service with metrics: true'));
  return { handler, store, metrics: exposition, closeStreams: () => feed.close(), close, answers };
}

/** An embedder's store must have the whole interface; a plain object would fail on the first request. */
function checkStore(store: unknown): void {
  const candidate = (typeof store === 'object' && store !== null ? store : {}) as Record<string, unknown>;
  const missing = ['list', 'get', 'create', 'close'].filter((name) => typeof candidate[name] !== 'function');
  if (!('ready' in candidate)) missing.push('ready');
  if (missing.length > 0)
    throw new TypeError(`options.store does not implement the PetStore interface: missing ${missing.join(', ')}`);
}
