import { AuthLimiter } from '../auth/limiter.js';
import { checkQuota, QuotaCounter, type QuotaPolicy } from '../auth/quota.js';
import { IDEMPOTENCY_KEY_LIMIT, IDEMPOTENCY_WINDOW_SECONDS } from '../pet/contract.js';
import { createApp, type RequestListener } from '../http/app.js';
import { WriteBatch } from '../http/connections/write-batch.js';
import { corsPolicy } from '../http/pipeline/cors.js';
import { trustedProxies } from '../http/access/client-address.js';
import { Feed } from '../http/feed/feed.js';
import { createMount, type Mount } from '../http/mount.js';
import { generateFirstKey, keyFilePath } from '../auth/key-file.js';
import { logKeyChanges, logKeyDuplicates } from '../auth/key-log.js';
import { Keyring } from '../auth/keyring.js';
import { jsonLogger, serviceLogger, type Logger } from '../lib/logger.js';
import { FileStore } from '../store/file/file-store.js';
import type { PetStore } from '../store/store.js';
import type { Replicator } from '../store/file/replication/replicator.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import { watchWebhooks, type WebhookOptions, type Webhooks } from './webhooks.js';

export interface PetstoreOptions extends WebhookOptions {
  /** Directory of the pet data and the key file. Required unless `store` is given. */
  dataDir?: string;
  /** A store of the embedder's own instead of the file store in `dataDir`. */
  store?: PetStore;
  /**
   * A PostgreSQL URL: pets and API keys are kept in that database, shared by every instance on it,
   * instead of in `dataDir` (needs the `postgres` package). Ignored when `store` is given.
   */
  databaseUrl?: string | undefined;
  /** Database connections at most (default 10). */
  databasePool?: number | undefined;
  /**
   * Reads pets from the database on every request instead of from a copy of all pets kept in each
   * instance's memory (the default): for a store larger than an instance's memory. PostgreSQL only.
   */
  databaseReads?: boolean | undefined;
  /**
   * API keys accepted besides those in `<dataDir>/keys.json`; only their SHA-256 hashes are kept. A key
   * holds every scope, or only those after a ':' (`key:pets:read`; several joined by '+'). Each key
   * once, and not also in keys.json: a DuplicateKeyError otherwise.
   */
  keys?: readonly string[];
  /**
   * A quota for every key without one of its own: at most `requests` per `seconds`, counted per key
   * (RateLimit headers, 429 past it). Off when absent.
   */
  rateLimit?: QuotaPolicy | undefined;
  /** Largest accepted request body in bytes (default 65536). */
  bodyLimit?: number;
  /** Failed authentications per address per minute before it gets 429 (default 30). */
  authFailureLimit?: number;
  /** Allowed browser origins (`*` or a comma-separated list); CORS is off when absent. */
  corsOrigin?: string | undefined;
  /**
   * Proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-For or Forwarded names the client: its
   * right-most address that is not one of them is the client's, for the failed-key limit and the log. Off when absent.
   */
  trustProxy?: string | undefined;
  /** The API reference page at `GET /v1/docs` (default true). */
  docs?: boolean | undefined;
  /**
   * Mount prefix such as `/api`: every route then lives under it (`/api/v1/pets`, `/api/healthz`), and
   * `Location`, `Link` and the OpenAPI `servers` say so. The handler matches `req.url` with the prefix.
   */
  basePath?: string | undefined;
  /** Seconds an Idempotency-Key is remembered after its create (default 86400, 24 hours). */
  idempotencyWindow?: number | undefined;
  /**
   * Idempotency-Keys the file store remembers per API key within the window (default 100,000); past
   * it a create with a new key gets 429 until the oldest leaves the window. The keys' text stays in
   * the pets' lines; memory holds about 30 bytes a key besides.
   */
  idempotencyKeyLimit?: number | undefined;
  /** Open event streams and waiting requests (`wait`) at most; more get 503 with Retry-After (default 500). */
  maxStreams?: number | undefined;
  /**
   * Event streams and waiting requests of one API key at most; more of that key's get 429
   * `too_many_streams` with Retry-After, while other keys' are held (default 50).
   */
  maxStreamsPerKey?: number | undefined;
  /**
   * Seconds an event stream lasts at most; then it ends cleanly and its client resumes with Last-Event-ID (default
   * 3600).
   */
  streamLifetime?: number | undefined;
  /** Seconds between the heartbeat comments of an event stream that has nothing else to send (default 15). */
  streamHeartbeat?: number | undefined;
  /** Absolute base URLs ending in /v1 (production, staging) for the OpenAPI `servers` list. */
  publicUrls?: readonly string[] | undefined;
  logger?: Logger;
  /**
   * Measure requests, the store and the process for `metrics()` (Prometheus text); off by default,
   * and then requests pay nothing for them.
   */
  metrics?: boolean | undefined;
  /**
   * A directory to keep a continuous copy of the file store in (docs/operations.md, "Replication"),
   * shipped every `replicateInterval` seconds (default 1) off the request path; the start is refused
   * when it cannot be used. `replicateTakeOver`: the id of another store whose destination this takes.
   */
  replicateTo?: string | undefined;
  replicateInterval?: number | undefined;
  replicateTakeOver?: string | undefined;
  /** Seconds back that a restore may reach (default 86400); older replicas are removed. */
  replicateRetention?: number | undefined;
  /** A file of keys that seal every replicated object (docs/operations.md, "Sealed replicas"). */
  replicateKeyFile?: string | undefined;
  /**
   * Called with a newly generated key when no key is configured anywhere (no `keys`, no key file in
   * `dataDir`): the key is shown once and only its hash is kept. Without it, no key is generated.
   */
  onKeyGenerated?: (key: string) => void;
  /** Milliseconds a graceful stop waits for requests in flight, and for replication's last round (default 10000). */
  shutdownTimeout?: number;
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

export const DEFAULTS = {
  bodyLimit: 64 * 1024,
  authFailureLimit: 30,
  idempotencyWindow: IDEMPOTENCY_WINDOW_SECONDS,
  idempotencyKeyLimit: IDEMPOTENCY_KEY_LIMIT,
  databasePool: 10,
  maxStreams: 500,
  maxStreamsPerKey: 50,
  streamLifetime: 3600,
  streamHeartbeat: 15,
} as const;

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
  const mount = createMount(options.basePath, options.publicUrls, options.docs ?? true);
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
  if (options.databaseUrl !== undefined && options.store === undefined) {
    const { openDatabase } = await import('./database.js');
    const database = await openDatabase(
      {
        ...options,
        databaseUrl: options.databaseUrl,
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
  let store = options.store;
  let replicator: Replicator | undefined;
  let webhooks: Webhooks | undefined;
  if (store === undefined) {
    if (options.dataDir === undefined) throw new TypeError('createPetstore needs a dataDir or a store');
    store = await FileStore.open(options.dataDir, {
      idempotencyWindowMs: (options.idempotencyWindow ?? DEFAULTS.idempotencyWindow) * 1000,
      idempotencyKeyLimit: options.idempotencyKeyLimit ?? DEFAULTS.idempotencyKeyLimit,
      onBackgroundError: (error) =>
        logger.error('background compaction failed; the journal still holds every pet', error),
      onRepair: (message) => logger.info(message),
    });
  }
  const opened = store;
  const closeStore = async (): Promise<void> => {
    await webhooks?.stop();
    await replicator?.stop();
    await opened.close();
  };
  let keyring: Keyring;
  try {
    // After the store is open: its directory lock keeps two first starts from generating two keys.
    if (options.dataDir !== undefined && options.onKeyGenerated !== undefined && (options.keys ?? []).length === 0) {
      const generated = await generateFirstKey(options.dataDir);
      if (generated !== undefined) options.onKeyGenerated(generated);
    }
    keyring = new Keyring({
      keys: options.keys ?? [],
      keyFile: options.dataDir === undefined ? undefined : keyFilePath(options.dataDir),
      onReloadError: (error) => logger.error('cannot reload the key file; the previous keys stay in force', error),
      onChange: logKeyChanges(logger),
      onDuplicate: logKeyDuplicates(logger),
    });
    if (options.replicateTo !== undefined && opened instanceof FileStore) {
      // Loaded only when configured: an embedder without replication carries none of its modules.
      const { startReplication } = await import('./replication.js');
      replicator = await startReplication(
        opened,
        options.dataDir as string,
        { ...options, replicateTo: options.replicateTo },
        logger,
      );
      metrics?.watchReplication(replicator);
    }
    const { dataDir } = options;
    if (dataDir !== undefined) {
      webhooks = await watchWebhooks(opened, dataDir, options, logger);
      // Registered now, empty until delivery starts: families are made once, with the service's metrics.
      metrics?.watchWebhooks(webhooks);
    }
  } catch (error) {
    await closeStore();
    throw error;
  }
  return {
    ...service(opened, keyring, options, logger, closeStore, mount, metrics),
    serving: () => replicator?.begin(),
  };
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
