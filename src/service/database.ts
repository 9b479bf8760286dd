/**
 * The service over PostgreSQL (`databaseUrl`): the pets, the API keys and the webhook subscriptions
 * are in the database, shared by every instance on it. Loaded only when a database URL is given, so
 * that the file-store path never loads the `postgres` package.
 */
import { resolve } from 'node:path';
import { newKey } from '../auth/key-file.js';
import { KeyPoller } from '../auth/key-poller.js';
import { logKeyChanges, logKeyDuplicates } from '../auth/key-log.js';
import { Keyring } from '../auth/keyring.js';
import type { Logger } from '../lib/logger.js';
import { withoutStack as failure } from '../lib/system-error.js';
import { describeUrl } from '../store/postgres/driver.js';
import { CopyReadError } from '../store/postgres/pet-copy.js';
import type { PostgresStoreOptions } from '../store/postgres/options.js';
import type { Recovered } from '../store/postgres/rewind.js';
import { PostgresStore } from '../store/postgres/store.js';
import type { PetStore } from '../store/store.js';
import { watchDatabaseWebhooks, type WebhookOptions, type Webhooks } from './webhooks.js';

export interface DatabaseOptions extends WebhookOptions {
  databaseUrl: string;
  databasePool: number;
  /** Pets read from the database, not from a copy in memory (PostgresStoreOptions.databaseReads). */
  databaseReads?: boolean | undefined;
  /** Seconds an Idempotency-Key is remembered after its create. */
  idempotencyWindow: number;
  keys?: readonly string[] | undefined;
  /** Where the pets a database lost are written (`lost-pets-<time>.jsonl`); default: the working directory. */
  dataDir?: string | undefined;
  onKeyGenerated?: ((key: string) => void) | undefined;
}

export interface OpenDatabase {
  store: PetStore;
  keyring: Keyring;
  webhooks: Webhooks;
  close(): Promise<void>;
}

export async function openDatabase(options: DatabaseOptions, logger: Logger): Promise<OpenDatabase> {
  const where = describeUrl(options.databaseUrl);
  const store = await PostgresStore.open(options.databaseUrl, storeOptions(options, logger, where));
  try {
    // As with the key file: only when no key is configured and this database never had one.
    if (options.onKeyGenerated !== undefined && (options.keys ?? []).length === 0) {
      const { key, record } = newKey('generated at first start');
      if (await store.addFirstKey(record)) options.onKeyGenerated(key);
    }
    const keyring = new Keyring({
      keys: options.keys ?? [],
      onChange: logKeyChanges(logger),
      onDuplicate: logKeyDuplicates(logger),
    });
    const poller = await KeyPoller.start(
      keyring,
      () => store.keys(),
      (error) => {
        logger.error('cannot read the API keys from the database; the keys read last stay in force', failure(error), {
          database: where,
        });
      },
    );
    const webhooks = await watchDatabaseWebhooks(store, options.databaseUrl, options, logger).catch(
      (error: unknown) => {
        poller.stop();
        throw error;
      },
    );
    const close = async (): Promise<void> => {
      poller.stop();
      await webhooks.stop();
      await store.close();
    };
    return { store, keyring, webhooks, close };
  } catch (error) {
    await store.close();
    throw error;
  }
}

/** The store's options, each event it reports logged with the database's address (`where`). */
function storeOptions(options: DatabaseOptions, logger: Logger, where: string): PostgresStoreOptions {
  return {
    pool: options.databasePool,
    idempotencyWindow: options.idempotencyWindow,
    databaseReads: options.databaseReads ?? false,
    onFilled: (pets, seconds) =>
      logger.info('the pets are read into memory; reads are answered from there', {
        pets,
        seconds: Number(seconds.toFixed(3)),
      }),
    onAvailability: (available, error) => {
      if (available) logger.info('the database is reachable again', { database: where });
      else
        logger.error('the database cannot be used; pets are answered 503 until it is back', failure(error), {
          database: where,
        });
    },
    lostPetsDirectory: resolve(options.dataDir ?? '.'),
    onWentBack: ({ reason, highWater }) =>
      logger.error(
        `the database went back (${reason}): it lost commits, as ` +
          'after a failover to a standby that had not received them; creates are refused with 503 until its id ' +
          'counter ' +
          `is past id ${highWater}, this instance's copy is read again and the lost pets are written to a file`,
        undefined,
        { database: where, highWater },
      ),
    onRecovered: (event) => logRecovered(logger, where, event),
    onBackgroundError: (error) => logBackgroundError(logger, where, error),
  };
}

/** A failure of the store's work in the background, which it tries again. */
function logBackgroundError(logger: Logger, where: string, error: unknown): void {
  if (error instanceof CopyReadError)
    logger.error(
      'the pets cannot be read into memory from the database (before the first complete read /readyz says 503; ' +
        'after it, new pets are missing from lists); trying again every 250 ms',
      failure(error),
      { database: where },
    );
  else
    logger.error(
      'cannot learn of the pets other instances commit (LISTEN, or the read of the highest id that stands in for ' +
        'it); trying again every 250 ms',
      failure(error),
      { database: where },
    );
}

/** The end of a recovery from a database that went back (rewind.ts): where the lost pets are. */
function logRecovered(logger: Logger, where: string, event: Recovered): void {
  const { highWater, lost, file, lostUnknown, unwritten } = event;
  const fields = { database: where, highWater, lost, file, pets: unwritten?.join('\n') };
  const taken = `creates are taken again: the id counter is past id ${highWater}`;
  if (lostUnknown) {
    logger.error(
      `${taken}; this instance keeps no copy of the pets (--database-reads on), so the pets the ` +
        'database lost cannot be listed here',
      undefined,
      fields,
    );
  } else if (lost === 0) {
    logger.info(`${taken} and the copy is read again; it held no pet the database lost`, fields);
  } else {
    const place = file === undefined ? 'in this line (the file could not be written)' : `in ${file}`;
    const told = `${taken} and the copy is read again; the ${lost} pets the database lost are ${place}`;
    logger.error(told, undefined, fields);
  }
}
