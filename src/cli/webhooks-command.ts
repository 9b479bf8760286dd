import { randomUUID } from 'node:crypto';
import { makeDirectory, nodeFileSystem } from '../lib/file-system.js';
import { PET_STATUSES, type PetStatus } from '../pet/contract.js';
import { checkEndpointUrl } from '../webhooks/endpoint-url.js';
import {
  newSecret,
  newSubscription,
  ROTATION_OVERLAP_MS,
  readSubscriptionFile,
  type Subscription,
  SubscriptionFileError,
  subscriptionFilePath,
  updateSubscriptionFile,
} from '../webhooks/subscription-file.js';
import { refuseRootInOthersDirectory } from './directory-owner.js';
import { CommandError, UsageError } from './errors.js';

/** What `webhooks` commands were given besides their words. */
export interface WebhookCommandOptions {
  label?: string | undefined;
  statuses?: readonly string[] | undefined;
  /** `replay --from`: the first pet id to deliver again. */
  from?: string | undefined;
  /** --webhooks-allow-http: an http:// URL may be added. */
  allowHttp: boolean;
}

const USAGE =
  'usage: webhooks add <https-url> [--label <text>] [--status <status>]… | webhooks list | webhooks remove <id>' +
  ' | webhooks rotate-secret <id> | webhooks replay <id> --from <pet id>';

/** Where subscriptions are kept: the data directory's webhooks.json, or the database's table. */
export interface SubscriptionStorage {
  /** Named in messages: the file's path, or the database without its password. */
  where: string;
  read(): Promise<Subscription[]>;
  /** Read-modify-write, one at a time; `change` returns the new list, or none to leave them. */
  update<T>(change: (subscriptions: Subscription[]) => { subscriptions?: Subscription[]; result: T }): Promise<T>;
}

/** The subscriptions of `dataDir`'s webhooks.json; the directory is made at the first change. */
export function subscriptionFileStorage(dataDir: string, command: string): SubscriptionStorage {
  const path = subscriptionFilePath(dataDir);
  return {
    where: path,
    read: async () => readSubscriptionFile(path) ?? [],
    async update(change) {
      refuseRootInOthersDirectory(dataDir, command);
      await makeDirectory(nodeFileSystem, dataDir);
      return updateSubscriptionFile(path, change);
    },
  };
}

/**
 * `webhooks add | list | remove | rotate-secret | replay` on `storage`; a running server takes each
 * change up within a second. A secret is printed once, never taken as an argument.
 */
export async function runWebhooksCommand(
  storage: SubscriptionStorage,
  args: readonly string[],
  options: WebhookCommandOptions,
  out: (line: string) => void,
): Promise<void> {
  try {
    await run(storage, args, options, out);
  } catch (error) {
    // A file that cannot be used is a failure to report in one line, as a bad key file is.
    if (error instanceof SubscriptionFileError) throw new CommandError(error.message);
    throw error;
  }
}

async function run(
  storage: SubscriptionStorage,
  args: readonly string[],
  options: WebhookCommandOptions,
  out: (line: string) => void,
): Promise<void> {
  const [action, ...rest] = args;
  if (action !== 'add' && (options.label !== undefined || options.statuses !== undefined))
    throw new UsageError('--label and --status apply only to "webhooks add"');
  if (action !== 'replay' && options.from !== undefined)
    throw new UsageError('--from applies only to "restore", "verify" and "webhooks replay"');
  switch (action) {
    case 'add':
      return add(storage, rest, options, out);
    case 'list':
      return list(storage, rest, out);
    case 'remove':
      return remove(storage, oneId(rest, 'remove'), out);
    case 'rotate-secret':
      return rotateSecret(storage, oneId(rest, 'rotate-secret'), out);
    case 'replay':
      return replay(storage, oneId(rest, 'replay'), options, out);
    default:
      throw new UsageError(USAGE);
  }
}

/** `webhooks add <url>`: a new subscription, its secret printed once. */
async function add(
  storage: SubscriptionStorage,
  rest: readonly string[],
  options: WebhookCommandOptions,
  out: (line: string) => void,
): Promise<void> {
  const [url, ...extra] = rest;
  if (url === undefined || extra.length > 0)
    throw new UsageError('usage: webhooks add <https-url> [--label <text>] [--status <status>]…');
  const label = options.label ?? '';
  // Shown one per line by webhooks list: a control character could forge lines there.
  if (/[\x00-\x1f\x7f]/.test(label))
    throw new UsageError('--label must not hold control characters (newlines, tabs, …)');
  const endpoint = checkUrl(url, options.allowHttp);
  const subscription = newSubscription(endpoint, label, statuses(options.statuses));
  await storage.update((all) => ({ subscriptions: [...all, subscription], result: undefined }));
  out(
    `added webhook ${subscription.id} for ${endpoint}${describeStatuses(subscription)}; ` +
      'its signing secret is shown only this once:',
  );
  out(subscription.secrets[0]?.secret ?? '');
}

/** `webhooks list`: one line per subscription, without its secrets. */
async function list(storage: SubscriptionStorage, rest: readonly string[], out: (line: string) => void): Promise<void> {
  if (rest.length > 0) throw new UsageError('"webhooks list" takes no arguments');
  const all = await storage.read();
  if (all.length === 0) out(`no webhooks in ${storage.where}`);
  for (const s of all)
    out(
      `${s.id}  ${s.created}  ${s.url}  ${s.statuses?.join(',') ?? 'all'}  ${s.secrets.length} secret(s)  ${s.label}`,
    );
}

async function remove(storage: SubscriptionStorage, id: string, out: (line: string) => void): Promise<void> {
  const found =
    (await storage.read()).length > 0 &&
    (await storage.update((all) => {
      const remaining = all.filter((s) => s.id !== id);
      return remaining.length === all.length ? { result: false } : { subscriptions: remaining, result: true };
    }));
  if (!found) throw new CommandError(`no webhook with id ${id} in ${storage.where}`);
  out(`removed webhook ${id}`);
}

/** `webhooks rotate-secret <id>`: a new secret, printed once; the previous one signs beside it for the overlap. */
async function rotateSecret(storage: SubscriptionStorage, id: string, out: (line: string) => void): Promise<void> {
  const secret = newSecret();
  const until = new Date(Date.now() + ROTATION_OVERLAP_MS).toISOString();
  const found = await storage.update((all) =>
    edit(all, id, (s) => {
      // Only the newest of the old secrets keeps signing through the overlap: two rotations in a row leave two.
      const previous = s.secrets.find((x) => x.expires === undefined);
      s.secrets = [{ secret }, ...(previous === undefined ? [] : [{ secret: previous.secret, expires: until }])];
    }),
  );
  if (!found) throw new CommandError(`no webhook with id ${id} in ${storage.where}`);
  out(
    `rotated the secret of webhook ${id}; the previous one also signs until ${until}; ` +
      'the new one is shown only this once:',
  );
  out(secret);
}

/** `webhooks replay <id> --from <pet id>`: delivery starts again at that pet. */
async function replay(
  storage: SubscriptionStorage,
  id: string,
  options: WebhookCommandOptions,
  out: (line: string) => void,
): Promise<void> {
  const from = options.from === undefined ? NaN : Number(options.from);
  if (!/^[1-9][0-9]{0,15}$/.test(options.from ?? '') || !Number.isSafeInteger(from))
    throw new UsageError('usage: webhooks replay <id> --from <pet id> (a positive integer)');
  const found = await storage.update((all) =>
    edit(all, id, (s) => {
      s.replay = { token: randomUUID(), from };
    }),
  );
  if (!found) throw new CommandError(`no webhook with id ${id} in ${storage.where}`);
  out(`webhook ${id} delivers again from pet ${from}, in order, once the server takes this up (within a second)`);
}

function oneId(rest: readonly string[], action: string): string {
  const [id, ...extra] = rest;
  if (id === undefined || extra.length > 0) throw new UsageError(`usage: webhooks ${action} <id>`);
  return id;
}

/** Changes the subscription `id` in place: the new list and true, or nothing and false. */
function edit(
  all: Subscription[],
  id: string,
  apply: (s: Subscription) => void,
): { subscriptions?: Subscription[]; result: boolean } {
  const found = all.find((s) => s.id === id);
  if (found === undefined) return { result: false };
  apply(found);
  return { subscriptions: all, result: true };
}

function checkUrl(url: string, allowHttp: boolean): string {
  try {
    return checkEndpointUrl(url, allowHttp).href;
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message);
    throw error;
  }
}

/** The statuses of every --status, each given once or comma-separated; all statuses without any. */
function statuses(given: readonly string[] | undefined): PetStatus[] | undefined {
  if (given === undefined) return undefined;
  const names = given.flatMap((value) => value.split(',')).map((name) => name.trim());
  for (const name of names) {
    if (!(PET_STATUSES as readonly string[]).includes(name))
      throw new UsageError(`--status must be one of ${PET_STATUSES.join(', ')}, got "${name}"`);
  }
  return PET_STATUSES.filter((status) => names.includes(status));
}

function describeStatuses(s: Subscription): string {
  return s.statuses === undefined ? '' : ` (pets with status ${s.statuses.join(' or ')})`;
}
