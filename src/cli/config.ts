import { parseGivenKey } from '../auth/keyring.js';
import { parseQuota, type QuotaPolicy } from '../auth/quota.js';
import { LOG_LEVELS, type LogLevel } from '../lib/logger.js';
import { SERVER_DEFAULTS } from '../service/listen.js';
import { createMount, parsePublicUrls } from '../http/mount.js';
import { trustedProxies } from '../http/access/client-address.js';
import { DEFAULTS } from '../service/create-petstore.js';
import { WEBHOOK_DEFAULTS } from '../service/webhooks.js';
import { DEFAULT_REPLICATE_INTERVAL, DEFAULT_REPLICATE_RETENTION } from '../service/replication.js';
import { UsageError } from './errors.js';

export { UsageError } from './errors.js';

/** Everything the command line configures. Each setting has a flag and an environment twin; the flag wins. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  bodyLimit: number;
  corsOrigin: string | undefined;
  basePath: string | undefined;
  idempotencyWindow: number;
  idempotencyKeyLimit: number;
  publicUrls: string[] | undefined;
  logLevel: LogLevel;
  authFailureLimit: number;
  rateLimit: QuotaPolicy | undefined;
  maxConnections: number;
  maxStreams: number;
  maxStreamsPerKey: number;
  streamLifetime: number;
  streamHeartbeat: number;
  headersTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
  maxHeaderSize: number;
  shutdownTimeout: number;
  tlsCert: string | undefined;
  tlsKey: string | undefined;
  databaseUrl: string | undefined;
  databasePool: number;
  databaseReads: boolean;
  metricsPort: number | undefined;
  metricsHost: string;
  replicateTo: string | undefined;
  replicateInterval: number;
  replicateTakeOver: string | undefined;
  replicateRetention: number;
  replicateKeyFile: string | undefined;
  webhooksAllowHttp: boolean;
  webhooksAllowPrivate: boolean;
  webhooksTimeout: number;
  webhooksRetryMax: number;
  sendTimeout: number;
  trustProxy: string | undefined;
  docs: boolean;
}

interface Setting<K extends keyof Config> {
  key: K;
  flag: string;
  env: string;
  default: Config[K];
  help: string;
  /** A flag given alone (`--webhooks-allow-http`), its environment twin `true` or `false`. */
  boolean?: true;
  parse(raw: string, source: string): Config[K];
}

const integer =
  (min: number, max: number) =>
  (raw: string, source: string): number => {
    const value = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
    if (!(value >= min && value <= max))
      throw new UsageError(`${source} must be an integer from ${min} to ${max}, got "${raw}"`);
    return value;
  };
const seconds = (raw: string, source: string): number => {
  const value = /^[0-9]+(\.[0-9]+)?$/.test(raw) ? Number(raw) : NaN;
  if (!(value >= 0.05 && value <= 3600))
    throw new UsageError(`${source} must be a number of seconds from 0.05 to 3600, got "${raw}"`);
  return value;
};
const text = (raw: string, source: string): string => {
  if (raw === '') throw new UsageError(`${source} must not be empty`);
  return raw;
};

/** The same check an embedder gets as a TypeError, as a usage error naming the flag or variable. */
export const embedderCheck =
  <T>(check: (raw: string) => T) =>
  (raw: string, source: string): T => {
    try {
      return check(raw);
    } catch (error) {
      if (error instanceof TypeError) throw new UsageError(`${source}: ${error.message}`);
      throw error;
    }
  };

const onOff = (raw: string, source: string): boolean => {
  if (raw !== 'true' && raw !== 'false') throw new UsageError(`${source} must be true or false, got "${raw}"`);
  return raw === 'true';
};

const setting = <K extends keyof Config>(s: Setting<K>): Setting<K> => s;

export const SETTINGS = [
  setting({
    key: 'port',
    flag: 'port',
    env: 'PORT',
    default: SERVER_DEFAULTS.port,
    help: 'TCP port to listen on (0: any free port)',
    parse: integer(0, 65535),
  }),
  setting({
    key: 'host',
    flag: 'host',
    env: 'HOST',
    default: SERVER_DEFAULTS.host,
    help: 'address to listen on',
    parse: text,
  }),
  setting({
    key: 'dataDir',
    flag: 'data-dir',
    env: 'PETSTORE_DATA_DIR',
    default: './data',
    help: 'directory of pets.json, its journal and keys.json; created if missing',
    parse: text,
  }),
  setting({
    key: 'bodyLimit',
    flag: 'body-limit',
    env: 'PETSTORE_BODY_LIMIT',
    default: DEFAULTS.bodyLimit,
    help: 'largest request body in bytes (413 beyond)',
    parse: integer(1, 64 * 1024 * 1024),
  }),
  setting({
    key: 'corsOrigin',
    flag: 'cors-origin',
    env: 'PETSTORE_CORS_ORIGIN',
    default: undefined,
    help: 'allowed browser origins, * or a comma-separated list (default: CORS off)',
    parse: text,
  }),
  setting({
    key: 'idempotencyWindow',
    flag: 'idempotency-window',
    env: 'PETSTORE_IDEMPOTENCY_WINDOW',
    default: DEFAULTS.idempotencyWindow,
    help: 'seconds an Idempotency-Key is remembered after its create',
    parse: integer(1, 365 * 24 * 60 * 60),
  }),
  setting({
    key: 'idempotencyKeyLimit',
    flag: 'idempotency-key-limit',
    env: 'PETSTORE_IDEMPOTENCY_KEY_LIMIT',
    default: DEFAULTS.idempotencyKeyLimit,
    help: 'Idempotency-Keys remembered per API key within the window (file store); 429 beyond',
    parse: integer(1, 100_000_000),
  }),
  setting({
    key: 'basePath',
    flag: 'base-path',
    env: 'PETSTORE_BASE_PATH',
    default: undefined,
    help: 'mount prefix such as /api: every path, Location and Link then starts with it',
    parse: embedderCheck((raw) => createMount(raw).root),
  }),
  setting({
    key: 'publicUrls',
    flag: 'public-url',
    env: 'PETSTORE_PUBLIC_URL',
    default: undefined,
    help: 'base URL(s) ending in /v1, comma-separated, listed as servers in /v1/openapi.json',
    parse: embedderCheck(parsePublicUrls),
  }),
  setting({
    key: 'logLevel',
    flag: 'log-level',
    env: 'PETSTORE_LOG_LEVEL',
    default: 'info',
    help: `${LOG_LEVELS.join(' | ')}; info logs one line per request, error only warnings and failures`,
    parse: (raw, source) => {
      if (!(LOG_LEVELS as readonly string[]).includes(raw))
        throw new UsageError(`${source} must be one of ${LOG_LEVELS.join(', ')}, got "${raw}"`);
      return raw as LogLevel;
    },
  }),
  setting({
    key: 'authFailureLimit',
    flag: 'auth-failure-limit',
    env: 'PETSTORE_AUTH_FAILURE_LIMIT',
    default: DEFAULTS.authFailureLimit,
    help: 'failed authentications per address per minute before 429',
    parse: integer(1, 1_000_000),
  }),
  setting({
    key: 'rateLimit',
    flag: 'rate-limit',
    env: 'PETSTORE_RATE_LIMIT',
    default: undefined,
    help:
      'quota of each key without its own, <requests>/<seconds> such as 100/60: RateLimit headers, 429 past it ' +
      '(default: off)',
    parse: embedderCheck(parseQuota),
  }),
  setting({
    key: 'maxConnections',
    flag: 'max-connections',
    env: 'PETSTORE_MAX_CONNECTIONS',
    default: SERVER_DEFAULTS.maxConnections,
    help: 'open connections at most; at the limit one without a request in progress is closed for a new one',
    parse: integer(1, 1_000_000),
  }),
  setting({
    key: 'maxStreams',
    flag: 'max-streams',
    env: 'PETSTORE_MAX_STREAMS',
    default: DEFAULTS.maxStreams,
    help: 'event streams and waiting requests (wait=) open at most; 503 beyond',
    parse: integer(1, 1_000_000),
  }),
  setting({
    key: 'maxStreamsPerKey',
    flag: 'max-streams-per-key',
    env: 'PETSTORE_MAX_STREAMS_PER_KEY',
    default: DEFAULTS.maxStreamsPerKey,
    help: 'event streams and waiting requests of one API key at most; 429 beyond',
    parse: integer(1, 1_000_000),
  }),
  setting({
    key: 'streamLifetime',
    flag: 'stream-lifetime',
    env: 'PETSTORE_STREAM_LIFETIME',
    default: DEFAULTS.streamLifetime,
    help: 'seconds an event stream lasts at most; its client resumes with Last-Event-ID',
    parse: integer(1, 86400),
  }),
  setting({
    key: 'streamHeartbeat',
    flag: 'stream-heartbeat',
    env: 'PETSTORE_STREAM_HEARTBEAT',
    default: DEFAULTS.streamHeartbeat,
    help: 'seconds between heartbeat comments of a quiet event stream',
    parse: integer(1, 3600),
  }),
  setting({
    key: 'headersTimeout',
    flag: 'headers-timeout',
    env: 'PETSTORE_HEADERS_TIMEOUT',
    default: SERVER_DEFAULTS.headersTimeout,
    help: 'ms to receive the request headers (408 beyond)',
    parse: integer(1, 3_600_000),
  }),
  setting({
    key: 'requestTimeout',
    flag: 'request-timeout',
    env: 'PETSTORE_REQUEST_TIMEOUT',
    default: SERVER_DEFAULTS.requestTimeout,
    help: 'ms to receive a whole request (408 beyond)',
    parse: integer(1, 3_600_000),
  }),
  setting({
    key: 'keepAliveTimeout',
    flag: 'keep-alive-timeout',
    env: 'PETSTORE_KEEP_ALIVE_TIMEOUT',
    default: SERVER_DEFAULTS.keepAliveTimeout,
    help: 'ms an idle keep-alive connection stays open',
    parse: integer(1, 3_600_000),
  }),
  setting({
    key: 'maxHeaderSize',
    flag: 'max-header-size',
    env: 'PETSTORE_MAX_HEADER_SIZE',
    default: SERVER_DEFAULTS.maxHeaderSize,
    help: 'largest request header block in bytes (431 beyond)',
    parse: integer(1024, 1024 * 1024),
  }),
  setting({
    key: 'tlsCert',
    flag: 'tls-cert',
    env: 'PETSTORE_TLS_CERT',
    default: undefined,
    help: 'PEM certificate (chain) file: serve HTTPS; needs --tls-key',
    parse: text,
  }),
  setting({
    key: 'tlsKey',
    flag: 'tls-key',
    env: 'PETSTORE_TLS_KEY',
    default: undefined,
    help: 'PEM private key file of --tls-cert',
    parse: text,
  }),
  setting({
    key: 'shutdownTimeout',
    flag: 'shutdown-timeout',
    env: 'PETSTORE_SHUTDOWN_TIMEOUT',
    default: SERVER_DEFAULTS.shutdownTimeout,
    help: 'ms a graceful stop waits for requests in flight',
    parse: integer(0, 3_600_000),
  }),
  setting({
    key: 'databaseUrl',
    flag: 'database-url',
    env: 'PETSTORE_DATABASE_URL',
    default: undefined,
    help:
      'postgres://… : keep pets and keys in PostgreSQL, shared by instances (needs the postgres package: ' +
      'docs/postgresql.md)',
    parse: text,
  }),
  setting({
    key: 'databasePool',
    flag: 'database-pool',
    env: 'PETSTORE_DATABASE_POOL',
    default: DEFAULTS.databasePool,
    help: 'database connections at most, per instance',
    parse: integer(1, 1000),
  }),
  setting({
    key: 'databaseReads',
    flag: 'database-reads',
    env: 'PETSTORE_DATABASE_READS',
    default: false,
    help:
      'on: read pets from the database on every request, not from a copy of them in memory (for stores larger ' +
      'than memory)',
    parse: (raw, source) => {
      if (raw !== 'on' && raw !== 'off') throw new UsageError(`${source} must be on or off, got "${raw}"`);
      return raw === 'on';
    },
  }),
  setting({
    key: 'metricsPort',
    flag: 'metrics-port',
    env: 'PETSTORE_METRICS_PORT',
    default: undefined,
    help: 'serve Prometheus metrics at GET /metrics on this port, without a key (0: any free port; default: off)',
    parse: integer(0, 65535),
  }),
  setting({
    key: 'metricsHost',
    flag: 'metrics-host',
    env: 'PETSTORE_METRICS_HOST',
    default: SERVER_DEFAULTS.metricsHost,
    help: 'address of the metrics listener',
    parse: text,
  }),
  setting({
    key: 'replicateTo',
    flag: 'replicate-to',
    env: 'PETSTORE_REPLICATE_TO',
    default: undefined,
    help:
      'directory or s3://bucket/prefix (AWS_* from the environment) to keep a continuous copy of the data ' +
      'directory in (docs/operations.md, Replication; default: off)',
    parse: text,
  }),
  setting({
    key: 'replicateInterval',
    flag: 'replicate-interval',
    env: 'PETSTORE_REPLICATE_INTERVAL',
    default: DEFAULT_REPLICATE_INTERVAL,
    help: 'seconds between replication rounds (0.05 to 3600)',
    parse: seconds,
  }),
  setting({
    key: 'replicateTakeOver',
    flag: 'replicate-take-over',
    env: 'PETSTORE_REPLICATE_TAKE_OVER',
    default: undefined,
    help:
      "the store id at the --replicate-to destination (this store's own, after a restore or copy; another's, to " +
      "take its destination) to make this data directory's history the newest there",
    parse: text,
  }),
  setting({
    key: 'replicateRetention',
    flag: 'replicate-retention',
    env: 'PETSTORE_REPLICATE_RETENTION',
    default: DEFAULT_REPLICATE_RETENTION,
    help: 'seconds back a restore may reach; older replicas are removed',
    parse: integer(60, 10 * 365 * 86400),
  }),
  setting({
    key: 'replicateKeyFile',
    flag: 'replicate-key-file',
    env: 'PETSTORE_REPLICATE_KEY_FILE',
    default: undefined,
    help:
      'a file of 256-bit keys ("replicate-key create"): every replicated object is sealed with AES-256-GCM under ' +
      'its first key, and opened under any (also for restore and verify --from)',
    parse: text,
  }),
  setting({
    key: 'webhooksAllowHttp',
    flag: 'webhooks-allow-http',
    env: 'PETSTORE_WEBHOOKS_ALLOW_HTTP',
    default: false,
    boolean: true,
    help: 'let webhooks deliver to http:// URLs (tests, local receivers)',
    parse: onOff,
  }),
  setting({
    key: 'webhooksAllowPrivate',
    flag: 'webhooks-allow-private',
    env: 'PETSTORE_WEBHOOKS_ALLOW_PRIVATE',
    default: false,
    boolean: true,
    help: 'let webhooks connect to loopback, private, link-local and metadata addresses',
    parse: onOff,
  }),
  setting({
    key: 'webhooksTimeout',
    flag: 'webhooks-timeout',
    env: 'PETSTORE_WEBHOOKS_TIMEOUT',
    default: WEBHOOK_DEFAULTS.timeout,
    help: 'seconds a receiver has to answer a delivery with 2xx (0.05 to 3600)',
    parse: seconds,
  }),
  setting({
    key: 'webhooksRetryMax',
    flag: 'webhooks-retry-max',
    env: 'PETSTORE_WEBHOOKS_RETRY_MAX',
    default: WEBHOOK_DEFAULTS.retryMax,
    help: 'seconds between retries of a failing delivery at most (0.05 to 3600)',
    parse: seconds,
  }),
  // Answers a client does not read (issue 41).
  setting({
    key: 'sendTimeout',
    flag: 'send-timeout',
    env: 'PETSTORE_SEND_TIMEOUT',
    default: SERVER_DEFAULTS.sendTimeout,
    help:
      'seconds an answer may go without its client taking a byte of it; then the connection is ended (0.05 to ' +
      '3600)',
    parse: seconds,
  }),
  setting({
    key: 'trustProxy',
    flag: 'trust-proxy',
    env: 'PETSTORE_TRUST_PROXY',
    default: undefined,
    help:
      'addresses or CIDRs of proxies, comma-separated: from them the client is the right-most untrusted hop of ' +
      'X-Forwarded-For or Forwarded',
    parse: embedderCheck((raw) => {
      trustedProxies(raw); // throws on an entry that is no address or CIDR
      return raw;
    }),
  }),
  setting({
    key: 'docs',
    flag: 'docs',
    env: 'PETSTORE_DOCS',
    default: true,
    help: 'on | off: the API reference page at GET /v1/docs',
    parse: (raw, source) => {
      if (raw !== 'on' && raw !== 'off') throw new UsageError(`${source} must be on or off, got "${raw}"`);
      return raw === 'on';
    },
  }),
] as const;

/** Resolves every setting: flag, else environment, else default. */
export function resolveConfig(flags: Readonly<Record<string, string | undefined>>, env: NodeJS.ProcessEnv): Config {
  const config: Partial<Record<keyof Config, unknown>> = {};
  for (const s of SETTINGS) config[s.key] = resolveSetting(s.key, flags, env);
  return config as Config;
}

/** One setting alone (the `keys` commands need only the data directory, whatever else is set). */
export function resolveSetting<K extends keyof Config>(
  key: K,
  flags: Readonly<Record<string, string | undefined>>,
  env: NodeJS.ProcessEnv,
): Config[K] {
  const s = SETTINGS.find((candidate) => candidate.key === key) as unknown as Setting<K>;
  const flag = flags[s.flag];
  const fromEnv = env[s.env];
  if (flag !== undefined) return s.parse(s.boolean === true ? 'true' : flag, `--${s.flag}`);
  if (fromEnv !== undefined && fromEnv !== '') return s.parse(fromEnv, s.env);
  return s.default;
}

/** PETSTORE_API_KEYS: comma-separated keys, each `key` or `key:scope` (scopes joined by '+'); blanks are ignored. */
export function envKeys(env: NodeJS.ProcessEnv): string[] {
  const keys = (env.PETSTORE_API_KEYS ?? '')
    .split(',')
    .map((k) => k.trim())
    .filter((k) => k !== '');
  // A key that cannot be sent as a bearer token would leave the server refusing everyone. The key
  // itself is not repeated in the message, only its place.
  const given = keys.map((key, i) => embedderCheck(parseGivenKey)(key, `PETSTORE_API_KEYS, key ${i + 1}`).key);
  // The same key twice (`K,K:pets:read`) would keep the first entry's scopes without a word.
  for (const [i, key] of given.entries()) {
    const again = given.indexOf(key, i + 1);
    if (again !== -1)
      throw new UsageError(
        `PETSTORE_API_KEYS, keys ${i + 1} and ${again + 1}: the same key twice (env-${i + 1}, env-${again + 1}); ` +
          `give each key once, with the scopes it should hold`,
      );
  }
  return keys;
}

/** The help of `--help`, its usage lines written with `command`, the name this program was started by. */
export function helpText(command: string): string {
  const under = ' '.repeat(command.length + 3);
  const rows = SETTINGS.map((s) => {
    // A flag too long for the column gets its description on the next line, not run into it.
    const flag = `  --${s.flag}${s.boolean === true ? '' : ' <value>'}`;
    const left = flag.length <= 30 ? flag.padEnd(32) : `${flag}\n${' '.repeat(32)}`;
    const fallback = s.default === undefined ? 'unset' : String(s.default);
    return `${left}${s.help}\n${' '.repeat(32)}env ${s.env}, default ${fallback}`;
  });
  return [
    'Pet Store API v1 server',
    '',
    'Usage:',
    `  ${command} [options]`,
    `${under}serve the API`,
    `  ${command} keys create [--label <text>] [--scope <scope>]… [--rate-limit <n>/<s>] [--data-dir <dir>]`,
    `${under}a key for the scopes given (pets:read, pets:write; repeated or comma-separated;`,
    `${under}default both), under a quota of its own if --rate-limit is given`,
    `  ${command} keys list [--data-dir <dir>]`,
    `  ${command} keys revoke <id> [--data-dir <dir>]`,
    `${under}(keys commands act on the database instead with --database-url)`,
    `  ${command} migrate --data-dir <dir> --database-url <url>`,
    `${under}copy a file store (pets and keys) into an empty database`,
    `  ${command} backup <dest-dir> [--data-dir <dir>]`,
    `${under}copy the data directory (also while a server runs on it)`,
    `${under}into a new or empty <dest-dir>; start a server there to restore`,
    `  ${command} verify [--data-dir <dir>]`,
    `${under}check every record against its checksum (also while a server runs on it);`,
    `${under}exit 0 intact, 1 damaged, 2 when it could not read it`,
    `  ${command} repair <dest-dir> [--data-dir <dir>]`,
    `${under}write every intact pet into a new data directory, the damaged records`,
    `${under}set aside beside them; <dir> is only read`,
    `  ${command} restore <new-dir> --from <replica-dir | s3://bucket/prefix> [--until <id | ISO time>] [--lineage ` +
      `<id>]`,
    `${under}a new data directory from the replicas of --replicate-to, as of the newest`,
    `${under}position of the newest history (or --until: every pet up to an id, or the newest state at or before a ` +
      `time)`,
    `  ${command} restore --list --from <replica-dir | s3://bucket/prefix>`,
    `${under}print every restore point: lineage, generation, position, time, highest id, pets`,
    `  ${command} replicate-key create <file> | replicate-key rotate <file>`,
    `${under}write a new key for --replicate-key-file (0600); rotate adds one, keeping the older for reading`,
    `  ${command} webhooks add <https-url> [--label <text>] [--status <status>]… [--data-dir <dir>]`,
    `${under}deliver every new pet (of those statuses) to the URL, signed; prints its secret once`,
    `  ${command} webhooks list | remove <id> | rotate-secret <id> | replay <id> --from <pet id>`,
    `  ${command} verify --from <replica-dir | s3://bucket/prefix>`,
    `${under}check every replicated object against its checksum, and the chain; exit 0 intact, 1 damaged`,
    '',
    'Options (a flag wins over its environment variable):',
    ...rows,
    `${'  -h, --help'.padEnd(32)}show this help`,
    `${'  --version'.padEnd(32)}print the version`,
    '',
    'Environment only:',
    '  PETSTORE_API_KEYS               comma-separated API keys accepted besides keys.json',
    '                                  (with none anywhere, the first start generates one and prints it once);',
    '                                  key:pets:read restricts a key to one scope',
    '',
  ].join('\n');
}
