/**
 * The commands that work on a database (`keys …` with --database-url, `migrate`): loaded only for
 * them, so that the file-store path never loads the `postgres` package.
 */
import { existsSync } from 'node:fs';
import type { Sql } from 'postgres';
import { keyFilePath, readKeyFile } from '../auth/key-file.js';
import { FileStore } from '../store/file/file-store.js';
import { describeUrl, openError, openPool } from '../store/postgres/driver.js';
import { importPets } from '../store/postgres/import.js';
import { addKey, readKeys, removeKey } from '../store/postgres/keys.js';
import { migrate } from '../store/postgres/schema.js';
import {
  readSubscriptions,
  updateSubscriptions,
  type StoredSubscription,
} from '../store/postgres/webhook-subscriptions.js';
import { isSubscription, type Subscription, SubscriptionFileError } from '../webhooks/subscription-file.js';
import { StoreOpenError } from '../store/store.js';
import type { Pet } from '../pet/pet.js';
import { UsageError } from './config.js';
import { counted } from './data-copy.js';
import { refuseRootInOthersDirectory } from './directory-owner.js';
import { runKeysCommand, type KeyStorage, type NewKeyOptions } from './keys-command.js';
import { runWebhooksCommand, type SubscriptionStorage, type WebhookCommandOptions } from './webhooks-command.js';

/**
 * Runs `use` on the database at `url`, its schema created or brought up to date first; closes the connection
 * afterwards.
 */
async function withDatabase<T>(url: string, use: (sql: Sql) => Promise<T>): Promise<T> {
  const sql = await openPool(url, { max: 1, statementTimeout: 30_000 });
  try {
    await migrate(sql).catch((error: unknown) => {
      throw error instanceof StoreOpenError ? error : openError(url, error);
    });
    return await use(sql);
  } finally {
    await sql.end({ timeout: 5 });
  }
}

/**
 * `keys create | list | revoke` on the keys in the database, which every instance on it follows within about a second.
 */
export function runDatabaseKeysCommand(
  url: string,
  args: readonly string[],
  newKey: NewKeyOptions,
  out: (line: string) => void,
): Promise<void> {
  return withDatabase(url, (sql) => {
    const storage: KeyStorage = {
      where: `the database ${describeUrl(url)}`,
      add: (record) => addKey(sql, record),
      list: () => readKeys(sql),
      remove: (id) => removeKey(sql, id),
    };
    return runKeysCommand(storage, args, newKey, out);
  });
}

/**
 * `webhooks add | list | remove | rotate-secret | replay` on the subscriptions in the database, which
 * every instance follows within a second.
 */
export function runDatabaseWebhooksCommand(
  url: string,
  args: readonly string[],
  options: WebhookCommandOptions,
  out: (line: string) => void,
): Promise<void> {
  return withDatabase(url, (sql) => {
    const storage: SubscriptionStorage = {
      where: `the database ${describeUrl(url)}`,
      read: async () => subscriptionsOf(await readSubscriptions(sql)),
      update: (change) =>
        updateSubscriptions(sql, (stored) => {
          const { subscriptions, result } = change(subscriptionsOf(stored));
          if (subscriptions === undefined) return { result };
          return { result, stored: subscriptions.map((s) => ({ id: s.id, document: JSON.stringify(s) })) };
        }),
    };
    return runWebhooksCommand(storage, args, options, out);
  });
}

/** The stored documents as subscriptions; one that is not a subscription is refused, as a bad webhooks.json is. */
function subscriptionsOf(stored: readonly StoredSubscription[]): Subscription[] {
  return stored.map(({ id, document }) => {
    const subscription: unknown = JSON.parse(document);
    if (isSubscription(subscription)) return subscription;
    throw new SubscriptionFileError(
      `the webhook subscription ${id} in the database is not {id, url, label, created, secrets}; correct or delete ` +
        `its row`,
    );
  });
}

/**
 * `migrate --data-dir <dir> --database-url <url>`: the file store's pets (ids kept) and keys into an empty database.
 * `command` is this command line, for the advice to run it as the directory's owner.
 */
export async function runMigrateCommand(
  dataDir: string,
  url: string | undefined,
  args: readonly string[],
  out: (line: string) => void,
  command: string,
): Promise<void> {
  if (args.length > 0) throw new UsageError('"migrate" takes no arguments besides --data-dir and --database-url');
  if (url === undefined)
    throw new UsageError('"migrate" needs --database-url (or PETSTORE_DATABASE_URL): the database to copy into');
  if (!existsSync(dataDir)) throw new UsageError(`there is no data directory ${dataDir} to migrate`);
  // Unlike verify and backup, which only read, the open below writes: the lock, and what a start tidies.
  refuseRootInOthersDirectory(
    dataDir,
    command,
    'migrate locks the directory and opens its store as a server does, so that nothing writes to it meanwhile, and a ' +
      "file root made there would be root's, which that user's server could not use",
  );
  // Opening takes the directory lock: no server may write to the file store while it is copied.
  const source = await FileStore.open(dataDir);
  try {
    const pets: Pet[] = [];
    let more = true;
    while (more) {
      const page = source.list({ after: pets.at(-1)?.id ?? 0, limit: 10_000 });
      for (const pet of page.pets) pets.push(pet);
      more = page.more;
    }
    const keys = readKeyFile(keyFilePath(dataDir)) ?? [];
    // Ids the file store may have handed out past its last pet (reserved before an unclean stop) are not handed out
    // again.
    const result = await withDatabase(url, (sql) => importPets(sql, pets, keys, source.lastId));
    out(
      `copied ${counted(result.pets, 'pet')} (last id ${result.lastId}) and ${result.keys} of ` +
        `${counted(keys.length, 'API key')} from ${dataDir} into ${describeUrl(url)}`,
    );
    out(`verified: the database holds ${counted(result.pets, 'pet')}; new pets get ids from ${result.lastId + 1}`);
  } finally {
    await source.close();
  }
}
