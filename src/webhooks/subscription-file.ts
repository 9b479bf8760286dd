import { randomBytes, randomUUID } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { nodeFileSystem } from '../lib/file-system.js';
import { LockFile } from '../lib/lock-file.js';
import { readPrivateFileSync } from '../lib/private-file.js';
import { replaceFile } from '../lib/replace-file.js';
import { reportToStderr } from '../lib/system-error.js';
import { PET_STATUSES, type PetStatus } from '../pet/contract.js';

/**
 * The webhook subscriptions of a data directory, `webhooks.json` (0600, as keys.json):
 * `{"format":"petstore-webhooks/1","subscriptions":[…]}`. Unlike an API key, a signing secret is kept
 * as it is: the server needs it to sign every delivery.
 */
const SUBSCRIPTION_FILE = 'webhooks.json';
const FORMAT = 'petstore-webhooks/1';

/** How long a rotated-out secret still signs, beside the new one: a day for receivers to take the new one. */
export const ROTATION_OVERLAP_MS = 24 * 60 * 60 * 1000;

export interface SigningSecret {
  /** `whsec_` + base64 of 32 random bytes (Standard Webhooks). */
  secret: string;
  /** ISO time after which it no longer signs; absent for the current secret. */
  expires?: string;
}

export interface Subscription {
  id: string;
  url: string;
  label: string;
  created: string;
  /** Only pets of these statuses; absent: every pet. */
  statuses?: PetStatus[];
  /** Newest first; every one not expired signs each delivery. */
  secrets: SigningSecret[];
  /** The last replay asked for: a server that has not applied `token` yet goes back to pet `from`. */
  replay?: { token: string; from: number };
}

/** The subscription file cannot be used (not JSON, not a subscription file, a newer format). */
export class SubscriptionFileError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SubscriptionFileError';
  }
}

export const subscriptionFilePath = (dataDir: string): string => join(dataDir, SUBSCRIPTION_FILE);

/** The subscriptions, or undefined when there is no file. A file others could have written is refused. */
export function readSubscriptionFile(path: string): Subscription[] | undefined {
  const text = readPrivateFileSync(path)?.toString('utf8');
  if (text === undefined) return undefined;
  // It holds signing secrets: readable by others is refused too, not only writable (readPrivateFileSync).
  if (((lstatSync(path, { throwIfNoEntry: false })?.mode ?? 0) & 0o077) !== 0) {
    const advice = 'chmod 600 it (and rotate the secrets)';
    throw new SubscriptionFileError(`${path} holds signing secrets and others may read it; ${advice}`);
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error;
    // Without the parser's message as cause: it quotes the text around the fault, which may be a secret.
    throw new SubscriptionFileError(`${path} is not valid JSON; restore it from a backup, or correct it by hand`);
  }
  const { format, subscriptions } = (document ?? {}) as { format?: unknown; subscriptions?: unknown };
  if (format !== FORMAT)
    throw new SubscriptionFileError(
      `${path} is not a subscription file of this version (expected "format": "${FORMAT}")`,
    );
  if (!Array.isArray(subscriptions) || !subscriptions.every(isSubscription)) {
    // Not the content: it holds signing secrets.
    throw new SubscriptionFileError(
      `${path} holds a subscription that is not {id, url, label, created, secrets}; correct it by hand`,
    );
  }
  return subscriptions;
}

export function isSubscription(value: unknown): value is Subscription {
  const s = value as Partial<Subscription> | null;
  return (
    typeof s?.id === 'string' &&
    typeof s.url === 'string' &&
    typeof s.label === 'string' &&
    typeof s.created === 'string' &&
    Array.isArray(s.secrets) &&
    s.secrets.length > 0 &&
    s.secrets.every((x) => typeof x?.secret === 'string' && x.secret.startsWith('whsec_')) &&
    (s.statuses === undefined || (Array.isArray(s.statuses) && s.statuses.every((x) => PET_STATUSES.includes(x)))) &&
    (s.replay === undefined || (typeof s.replay.token === 'string' && Number.isSafeInteger(s.replay.from)))
  );
}

/** Cheap identity of the file's content (inode, size, mtime, mode): a rewrite is a rename, a new inode. */
export function subscriptionFileVersion(path: string): string {
  const stat = lstatSync(path, { throwIfNoEntry: false });
  return stat === undefined ? 'absent' : `${stat.ino}:${stat.size}:${stat.mtimeMs}:${stat.mode}`;
}

/** Read-modify-write under an exclusive lock; `change` returns the new list, or none to leave the file. */
export async function updateSubscriptionFile<T>(
  path: string,
  change: (subscriptions: Subscription[]) => { subscriptions?: Subscription[]; result: T },
): Promise<T> {
  const lock = await LockFile.acquire(`${path}.lock`, 5000);
  try {
    const { subscriptions, result } = change(readSubscriptionFile(path) ?? []);
    if (subscriptions !== undefined) {
      const text = `${JSON.stringify({ format: FORMAT, subscriptions }, null, 2)}\n`;
      await replaceFile(nodeFileSystem, path, [text], reportToStderr);
    }
    return result;
  } finally {
    lock.release();
  }
}

/** A new signing secret in the Standard Webhooks form. */
export function newSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

export function newSubscription(url: string, label: string, statuses: readonly PetStatus[] | undefined): Subscription {
  const subscription: Subscription = {
    id: `wh_${randomUUID().slice(0, 8)}`,
    url,
    label,
    created: new Date().toISOString(),
    secrets: [{ secret: newSecret() }],
  };
  if (statuses !== undefined) subscription.statuses = [...statuses];
  return subscription;
}

/** The secrets that sign at `now` (wall-clock ms): the current one and any rotated out less than the overlap ago. */
export function signingSecrets(subscription: Subscription, now: number): string[] {
  return subscription.secrets
    .filter((s) => s.expires === undefined || Date.parse(s.expires) > now)
    .map((s) => s.secret);
}
