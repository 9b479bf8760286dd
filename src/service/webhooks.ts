import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from '../lib/logger.js';
import { DEFAULTS, type SettingOptions } from './settings.js';
import { withoutStack } from '../lib/system-error.js';
import { type PetStore, StoreUnavailableError } from '../store/store.js';
import type { Deliveries, SubscriptionStats } from '../webhooks/deliveries.js';
import type { DeliveryOptions } from '../webhooks/subscription-delivery.js';

/** How webhooks deliver: settings of the command line too, declared in settings.ts. */
export type WebhookOptions = SettingOptions<
  'webhooksAllowHttp' | 'webhooksAllowPrivate' | 'webhooksTimeout' | 'webhooksRetryMax'
>;

// The same name as src/webhooks/subscription-file.ts gives it: that module is not loaded to look for the file.
const SUBSCRIPTION_FILE = 'webhooks.json';
const LOOK_INTERVAL_MS = 1000;
// A lease renewal that takes longer is given up (and tried again a second later).
const DATABASE_STATEMENT_TIMEOUT_MS = 5000;

/** The webhooks of one service: their figures for metrics (none before they start) and their stop. */
export interface Webhooks {
  stats(): SubscriptionStats[];
  stop(): Promise<void>;
}

/**
 * Delivers the pets of `store` to the subscriptions of `dataDir` once it has a `webhooks.json`: at
 * once, or when a `webhooks add` makes one (looked for every second). Until then no module of
 * src/webhooks/ is loaded: a service without subscriptions carries none of them.
 */
export async function watchWebhooks(
  store: PetStore,
  dataDir: string,
  options: WebhookOptions,
  logger: Logger,
): Promise<Webhooks> {
  const path = join(dataDir, SUBSCRIPTION_FILE);
  const start = async (): Promise<Deliveries> => {
    const { FileSource } = await import('../webhooks/file-source.js');
    const source = FileSource.open(dataDir, (error) =>
      logger.error('cannot write the webhook cursors; their pets may be delivered again after a restart', error),
    );
    return (await import('../webhooks/deliveries.js')).Deliveries.start(
      store,
      source,
      deliveryOptions(options),
      logger,
    );
  };
  let deliveries: Deliveries | undefined;
  let starting: Promise<void> | undefined;
  let timer: NodeJS.Timeout | undefined;
  const exists = (): boolean => lstatSync(path, { throwIfNoEntry: false }) !== undefined;
  if (exists()) deliveries = await start();
  else {
    const look = (): void => {
      if (!exists()) return;
      clearInterval(timer);
      starting = start().then(
        (started) => {
          deliveries = started;
        },
        (error: unknown) => logger.error('cannot start webhook delivery; fix webhooks.json and restart', error),
      );
    };
    // Unref'd: looking alone never keeps the process alive.
    timer = setInterval(look, LOOK_INTERVAL_MS).unref();
  }
  return {
    stats: () => deliveries?.stats() ?? [],
    async stop() {
      clearInterval(timer);
      await starting;
      await deliveries?.stop();
    },
  };
}

/**
 * Delivers the pets of `store` to the subscriptions in the database at `databaseUrl`, each by the one
 * instance holding its lease (webhooks/database-source.ts), through a pool of two connections of its own.
 * Started in the background, tried again every second while the database cannot answer: the start
 * of the service never waits on it (its first reads go to the database until the pets are in memory).
 */
export async function watchDatabaseWebhooks(
  store: PetStore,
  databaseUrl: string,
  options: WebhookOptions,
  logger: Logger,
): Promise<Webhooks> {
  const { isUnavailable, openPool } = await import('../store/postgres/driver.js');
  const { DatabaseSource } = await import('../webhooks/database-source.js');
  const { Deliveries } = await import('../webhooks/deliveries.js');
  const sql = await openPool(databaseUrl, { max: 2, statementTimeout: DATABASE_STATEMENT_TIMEOUT_MS });
  const source = new DatabaseSource(sql, (error) =>
    logger.error('cannot store a webhook cursor in the database; its pets may be delivered again', withoutStack(error)),
  );
  let deliveries: Deliveries | undefined;
  let stopping = false;
  let wake: () => void = () => {};
  const starting = (async () => {
    while (!stopping) {
      try {
        deliveries = await Deliveries.start(store, source, deliveryOptions(options), logger);
        return;
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) && !isUnavailable(error)) throw error;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, LOOK_INTERVAL_MS).unref();
      });
    }
  })().catch((error: unknown) => logger.error('cannot start webhook delivery; restart the server to deliver', error));
  return {
    stats: () => deliveries?.stats() ?? [],
    async stop() {
      stopping = true;
      wake();
      await starting;
      await deliveries?.stop();
      await sql.end({ timeout: 5 });
    },
  };
}

function deliveryOptions(options: WebhookOptions): DeliveryOptions {
  return {
    allowHttp: options.webhooksAllowHttp ?? false,
    allowPrivate: options.webhooksAllowPrivate ?? false,
    timeoutMs: (options.webhooksTimeout ?? DEFAULTS.webhooksTimeout) * 1000,
    retryMaxMs: (options.webhooksRetryMax ?? DEFAULTS.webhooksRetryMax) * 1000,
  };
}
