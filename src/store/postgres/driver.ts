import type { Options, Sql } from 'postgres';
import { StoreOpenError } from '../store.js';

/**
 * The `postgres` package (porsager/postgres), an optional peer dependency: loaded here, and only
 * when a database URL is given, so that the file store never needs it. The settings every session
 * gets, and which errors mean "the database is unreachable right now", live here too.
 */

export interface PoolOptions {
  /** Connections at most (the pool); queries beyond wait for a free one. */
  max: number;
  /** Milliseconds a statement may run before the server cancels it (lock waits included). */
  statementTimeout: number;
}

// `onnotify` is an option of the driver its types leave out (its own `listen` uses it).
type Driver = (
  url: string,
  options: Partial<Options<Record<string, never>>> & { onnotify?: (channel: string, payload: string) => void },
) => Sql;

async function loadDriver(): Promise<Driver> {
  try {
    const module = (await import('postgres')) as unknown as { default: Driver };
    return module.default;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ERR_MODULE_NOT_FOUND' && code !== 'MODULE_NOT_FOUND') throw error;
    throw new StoreOpenError(
      '--database-url needs the "postgres" package, which is not installed; add only it: ' +
        'npm install postgres@^3.4 in a project that installed this package, or npm install --prefix dist --no-save ' +
        '--no-package-lock postgres@^3.4 in a production tree made from a clone (docs/postgresql.md, "Starting")',
      { cause: error },
    );
  }
}

/**
 * A bounded pool on `url`. Every session runs with the statement timeout, and with
 * `synchronous_commit` on unless the database is already set to something at least as durable:
 * a COMMIT returns only once it is on disk (or on the standbys the operator asked for).
 */
export async function openPool(url: string, options: PoolOptions): Promise<Sql> {
  const driver = await loadDriver();
  const connection = {
    application_name: 'petstore',
    statement_timeout: options.statementTimeout,
    idle_in_transaction_session_timeout: options.statementTimeout * 2,
  };
  const settings = {
    max: options.max,
    connect_timeout: Math.max(1, Math.ceil(options.statementTimeout / 1000)),
    idle_timeout: 60,
    fetch_types: false,
    onnotice: () => {},
  };
  const probe = driver(url, { ...settings, max: 1, connection });
  let synchronousCommit: string;
  try {
    const [row] = await probe<[{ setting: string }]>`SELECT current_setting('synchronous_commit') AS setting`;
    synchronousCommit = row?.setting ?? 'on';
  } catch (error) {
    throw openError(url, error);
  } finally {
    await probe.end({ timeout: 1 });
  }
  return driver(url, {
    ...settings,
    connection: synchronousCommit === 'off' ? { ...connection, synchronous_commit: 'on' } : connection,
  });
}

/** What the one connection of a listener tells: each NOTIFY, and each close (a failed connect too). */
export interface ListenerEvents {
  onNotify(channel: string, payload: string): void;
  onClose(): void;
}

/**
 * One connection on `url` of its own, for LISTEN: never closed for being idle or old, connecting
 * again when a statement is sent after a close. (The driver's own `listen` gives no sign while it is
 * down, and gives up for good when the database is away at its one attempt to listen again.)
 */
export async function openListener(url: string, statementTimeout: number, events: ListenerEvents): Promise<Sql> {
  const driver = await loadDriver();
  return driver(url, {
    max: 1,
    connect_timeout: Math.max(1, Math.ceil(statementTimeout / 1000)),
    max_lifetime: null,
    fetch_types: false,
    onnotice: () => {},
    onnotify: (channel, payload) => events.onNotify(channel, payload),
    onclose: () => events.onClose(),
    connection: { application_name: 'petstore-listen', statement_timeout: statementTimeout },
  });
}

/** A StoreOpenError for a failure to reach or set up the database, naming it without its password. */
export function openError(url: string, error: unknown): StoreOpenError {
  return new StoreOpenError(
    `cannot use the database ${describeUrl(url)}: ${(error as Error)?.message ?? String(error)}`,
    { cause: error },
  );
}

/** `postgres://user@host:port/db`, never the password. */
export function describeUrl(url: string): string {
  if (!URL.canParse(url)) return '(a database URL that is not a valid URL)';
  const parsed = new URL(url);
  parsed.password = '';
  parsed.search = '';
  return parsed.toString();
}

// Client-side codes of the driver and of node:net when the database cannot be reached.
const UNREACHABLE = new Set([
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
  'CONNECT_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
]);
// SQLSTATE classes that say "not now" rather than "wrong": 08 connection exception, 53 insufficient
// resources (disk full, too many connections), 57 operator intervention (shutdown, statement timeout),
// 58 system error (I/O); and single states: serialization failure, deadlock, lock not available, a read-only standby.
const TRANSIENT_CLASSES = new Set(['08', '53', '57', '58']);
const TRANSIENT_STATES = new Set(['40001', '40P01', '55P03', '25006']);

/**
 * Whether `error` means the database is unreachable or cannot serve right now, so that trying again later may succeed.
 */
export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  return (
    UNREACHABLE.has(code) ||
    TRANSIENT_STATES.has(code) ||
    (code.length === 5 && TRANSIENT_CLASSES.has(code.slice(0, 2)))
  );
}
