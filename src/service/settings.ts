import { parseQuota } from '../auth/quota.js';
import { trustedProxies } from '../http/access/client-address.js';
import { createMount, parsePublicUrls } from '../http/mount.js';
import { LOG_LEVELS } from '../lib/logger.js';
import { IDEMPOTENCY_KEY_LIMIT, IDEMPOTENCY_WINDOW_SECONDS } from '../pet/contract.js';

/**
 * One setting of the server: the command line reads it from its flag or environment variable, an embedder
 * gives it as the option `key` (or, where `option` is set, as that option instead), and both fall back to
 * `default`. `--help` and the types of `Config` and of the embedding options are made from these rows.
 */
interface Declaration {
  /** The name of the setting in `Config`, and of the embedding option unless `option` is set. */
  key: string;
  flag: string;
  env: string;
  /**
   * integer and seconds: a number from `min` to `max` (whole for integer); text: not empty; switch: a flag
   * given alone, its variable `true` or `false`; on-off: `on` or `off`; choice: one of `choices`; checked:
   * what `check` returns, which throws a TypeError for a value it refuses (as it does to an embedder).
   */
  type: 'integer' | 'seconds' | 'text' | 'switch' | 'on-off' | 'choice' | 'checked';
  min?: number;
  max?: number;
  choices?: readonly string[];
  check?: (raw: string) => unknown;
  default: number | string | boolean | undefined;
  help: string;
  /** The embedding option that carries this setting in another form (`tls` holds the PEM text, `logger` a level). */
  option?: 'tls' | 'logger';
}

export const SETTINGS = [
  {
    key: 'port',
    flag: 'port',
    env: 'PORT',
    default: 8080,
    help: 'TCP port to listen on (0: any free port)',
    type: 'integer',
    min: 0,
    max: 65535,
  },
  {
    key: 'host',
    flag: 'host',
    env: 'HOST',
    default: '127.0.0.1',
    help: 'address to listen on',
    type: 'text',
  },
  {
    key: 'dataDir',
    flag: 'data-dir',
    env: 'PETSTORE_DATA_DIR',
    default: './data',
    help: 'directory of pets.json, its journal and keys.json; created if missing',
    type: 'text',
  },
  {
    key: 'bodyLimit',
    flag: 'body-limit',
    env: 'PETSTORE_BODY_LIMIT',
    default: 64 * 1024,
    help: 'largest request body in bytes (413 beyond)',
    type: 'integer',
    min: 1,
    max: 64 * 1024 * 1024,
  },
  {
    key: 'corsOrigin',
    flag: 'cors-origin',
    env: 'PETSTORE_CORS_ORIGIN',
    default: undefined,
    help: 'allowed browser origins, * or a comma-separated list (default: CORS off)',
    type: 'text',
  },
  {
    key: 'idempotencyWindow',
    flag: 'idempotency-window',
    env: 'PETSTORE_IDEMPOTENCY_WINDOW',
    default: IDEMPOTENCY_WINDOW_SECONDS,
    help: 'seconds an Idempotency-Key is remembered after its create',
    type: 'integer',
    min: 1,
    max: 365 * 24 * 60 * 60,
  },
  {
    key: 'idempotencyKeyLimit',
    flag: 'idempotency-key-limit',
    env: 'PETSTORE_IDEMPOTENCY_KEY_LIMIT',
    default: IDEMPOTENCY_KEY_LIMIT,
    help: 'Idempotency-Keys remembered per API key within the window (file store); 429 beyond',
    type: 'integer',
    min: 1,
    max: 100_000_000,
  },
  {
    key: 'basePath',
    flag: 'base-path',
    env: 'PETSTORE_BASE_PATH',
    default: undefined,
    help: 'mount prefix such as /api: every path, Location and Link then starts with it',
    type: 'checked',
    check: (raw: string): string => createMount(raw).root,
  },
  {
    key: 'publicUrls',
    flag: 'public-url',
    env: 'PETSTORE_PUBLIC_URL',
    default: undefined,
    help: 'base URL(s) ending in /v1, comma-separated, listed as servers in /v1/openapi.json',
    type: 'checked',
    check: (raw: string): readonly string[] => parsePublicUrls(raw),
  },
  {
    key: 'logLevel',
    flag: 'log-level',
    env: 'PETSTORE_LOG_LEVEL',
    default: 'info',
    help: `${LOG_LEVELS.join(' | ')}; info logs one line per request, error only warnings and failures`,
    type: 'choice',
    choices: LOG_LEVELS,
    option: 'logger',
  },
  {
    key: 'authFailureLimit',
    flag: 'auth-failure-limit',
    env: 'PETSTORE_AUTH_FAILURE_LIMIT',
    default: 30,
    help: 'failed authentications per address per minute before 429',
    type: 'integer',
    min: 1,
    max: 1_000_000,
  },
  {
    key: 'rateLimit',
    flag: 'rate-limit',
    env: 'PETSTORE_RATE_LIMIT',
    default: undefined,
    help:
      'quota of each key without its own, <requests>/<seconds> such as 100/60: RateLimit headers, 429 past it ' +
      '(default: off)',
    type: 'checked',
    check: parseQuota,
  },
  {
    key: 'maxConnections',
    flag: 'max-connections',
    env: 'PETSTORE_MAX_CONNECTIONS',
    default: 1_000,
    help: 'open connections at most; at the limit one without a request in progress is closed for a new one',
    type: 'integer',
    min: 1,
    max: 1_000_000,
  },
  {
    key: 'maxStreams',
    flag: 'max-streams',
    env: 'PETSTORE_MAX_STREAMS',
    default: 500,
    help: 'event streams and waiting requests (wait=) open at most; 503 beyond',
    type: 'integer',
    min: 1,
    max: 1_000_000,
  },
  {
    key: 'maxStreamsPerKey',
    flag: 'max-streams-per-key',
    env: 'PETSTORE_MAX_STREAMS_PER_KEY',
    default: 50,
    help: 'event streams and waiting requests of one API key at most; 429 beyond',
    type: 'integer',
    min: 1,
    max: 1_000_000,
  },
  {
    key: 'streamLifetime',
    flag: 'stream-lifetime',
    env: 'PETSTORE_STREAM_LIFETIME',
    default: 3600,
    help: 'seconds an event stream lasts at most; its client resumes with Last-Event-ID',
    type: 'integer',
    min: 1,
    max: 86400,
  },
  {
    key: 'streamHeartbeat',
    flag: 'stream-heartbeat',
    env: 'PETSTORE_STREAM_HEARTBEAT',
    default: 15,
    help: 'seconds between heartbeat comments of a quiet event stream',
    type: 'integer',
    min: 1,
    max: 3600,
  },
  {
    key: 'headersTimeout',
    flag: 'headers-timeout',
    env: 'PETSTORE_HEADERS_TIMEOUT',
    default: 10_000,
    help: 'ms to receive the request headers (408 beyond)',
    type: 'integer',
    min: 1,
    max: 3_600_000,
  },
  {
    key: 'requestTimeout',
    flag: 'request-timeout',
    env: 'PETSTORE_REQUEST_TIMEOUT',
    default: 30_000,
    help: 'ms to receive a whole request (408 beyond)',
    type: 'integer',
    min: 1,
    max: 3_600_000,
  },
  {
    key: 'keepAliveTimeout',
    flag: 'keep-alive-timeout',
    env: 'PETSTORE_KEEP_ALIVE_TIMEOUT',
    default: 5_000,
    help: 'ms an idle keep-alive connection stays open',
    type: 'integer',
    min: 1,
    max: 3_600_000,
  },
  {
    key: 'maxHeaderSize',
    flag: 'max-header-size',
    env: 'PETSTORE_MAX_HEADER_SIZE',
    default: 16 * 1024,
    help: 'largest request header block in bytes (431 beyond)',
    type: 'integer',
    min: 1024,
    max: 1024 * 1024,
  },
  {
    key: 'tlsCert',
    flag: 'tls-cert',
    env: 'PETSTORE_TLS_CERT',
    default: undefined,
    help: 'PEM certificate (chain) file: serve HTTPS; needs --tls-key',
    type: 'text',
    option: 'tls',
  },
  {
    key: 'tlsKey',
    flag: 'tls-key',
    env: 'PETSTORE_TLS_KEY',
    default: undefined,
    help: 'PEM private key file of --tls-cert',
    type: 'text',
    option: 'tls',
  },
  {
    key: 'shutdownTimeout',
    flag: 'shutdown-timeout',
    env: 'PETSTORE_SHUTDOWN_TIMEOUT',
    default: 10_000,
    help: 'ms a graceful stop waits for requests in flight',
    type: 'integer',
    min: 0,
    max: 3_600_000,
  },
  {
    key: 'databaseUrl',
    flag: 'database-url',
    env: 'PETSTORE_DATABASE_URL',
    default: undefined,
    help:
      'postgres://… : keep pets and keys in PostgreSQL, shared by instances (needs the postgres package: ' +
      'docs/postgresql.md)',
    type: 'text',
  },
  {
    key: 'databasePool',
    flag: 'database-pool',
    env: 'PETSTORE_DATABASE_POOL',
    default: 10,
    help: 'database connections at most, per instance',
    type: 'integer',
    min: 1,
    max: 1000,
  },
  {
    key: 'databaseReads',
    flag: 'database-reads',
    env: 'PETSTORE_DATABASE_READS',
    default: false,
    help:
      'on: read pets from the database on every request, not from a copy of them in memory (for stores larger ' +
      'than memory)',
    type: 'on-off',
  },
  {
    key: 'metricsPort',
    flag: 'metrics-port',
    env: 'PETSTORE_METRICS_PORT',
    default: undefined,
    help: 'serve Prometheus metrics at GET /metrics on this port, without a key (0: any free port; default: off)',
    type: 'integer',
    min: 0,
    max: 65535,
  },
  {
    key: 'metricsHost',
    flag: 'metrics-host',
    env: 'PETSTORE_METRICS_HOST',
    default: '127.0.0.1',
    help: 'address of the metrics listener',
    type: 'text',
  },
  {
    key: 'replicateTo',
    flag: 'replicate-to',
    env: 'PETSTORE_REPLICATE_TO',
    default: undefined,
    help:
      'directory or s3://bucket/prefix (AWS_* from the environment) to keep a continuous copy of the data ' +
      'directory in (docs/operations.md, Replication; default: off)',
    type: 'text',
  },
  {
    key: 'replicateInterval',
    flag: 'replicate-interval',
    env: 'PETSTORE_REPLICATE_INTERVAL',
    default: 1,
    help: 'seconds between replication rounds (0.05 to 3600)',
    type: 'seconds',
    min: 0.05,
    max: 3600,
  },
  {
    key: 'replicateTakeOver',
    flag: 'replicate-take-over',
    env: 'PETSTORE_REPLICATE_TAKE_OVER',
    default: undefined,
    help:
      "the store id at the --replicate-to destination (this store's own, after a restore or copy; another's, to " +
      "take its destination) to make this data directory's history the newest there",
    type: 'text',
  },
  {
    key: 'replicateRetention',
    flag: 'replicate-retention',
    env: 'PETSTORE_REPLICATE_RETENTION',
    default: 86_400,
    help: 'seconds back a restore may reach; older replicas are removed',
    type: 'integer',
    min: 60,
    max: 10 * 365 * 86400,
  },
  {
    key: 'replicateKeyFile',
    flag: 'replicate-key-file',
    env: 'PETSTORE_REPLICATE_KEY_FILE',
    default: undefined,
    help:
      'a file of 256-bit keys ("replicate-key create"): every replicated object is sealed with AES-256-GCM under ' +
      'its first key, and opened under any (also for restore and verify --from)',
    type: 'text',
  },
  {
    key: 'webhooksAllowHttp',
    flag: 'webhooks-allow-http',
    env: 'PETSTORE_WEBHOOKS_ALLOW_HTTP',
    default: false,
    help: 'let webhooks deliver to http:// URLs (tests, local receivers)',
    type: 'switch',
  },
  {
    key: 'webhooksAllowPrivate',
    flag: 'webhooks-allow-private',
    env: 'PETSTORE_WEBHOOKS_ALLOW_PRIVATE',
    default: false,
    help: 'let webhooks connect to loopback, private, link-local and metadata addresses',
    type: 'switch',
  },
  {
    key: 'webhooksTimeout',
    flag: 'webhooks-timeout',
    env: 'PETSTORE_WEBHOOKS_TIMEOUT',
    default: 10,
    help: 'seconds a receiver has to answer a delivery with 2xx (0.05 to 3600)',
    type: 'seconds',
    min: 0.05,
    max: 3600,
  },
  {
    key: 'webhooksRetryMax',
    flag: 'webhooks-retry-max',
    env: 'PETSTORE_WEBHOOKS_RETRY_MAX',
    default: 600,
    help: 'seconds between retries of a failing delivery at most (0.05 to 3600)',
    type: 'seconds',
    min: 0.05,
    max: 3600,
  },
  // Answers a client does not read (issue 41).
  {
    key: 'sendTimeout',
    flag: 'send-timeout',
    env: 'PETSTORE_SEND_TIMEOUT',
    default: 60,
    help:
      'seconds an answer may go without its client taking a byte of it; then the connection is ended (0.05 to ' +
      '3600)',
    type: 'seconds',
    min: 0.05,
    max: 3600,
  },
  {
    key: 'trustProxy',
    flag: 'trust-proxy',
    env: 'PETSTORE_TRUST_PROXY',
    default: undefined,
    help:
      'addresses or CIDRs of proxies, comma-separated: from them the client is the right-most untrusted hop of ' +
      'X-Forwarded-For or Forwarded',
    type: 'checked',
    check: (raw: string): string => {
      trustedProxies(raw); // throws on an entry that is no address or CIDR
      return raw;
    },
  },
  {
    key: 'docs',
    flag: 'docs',
    env: 'PETSTORE_DOCS',
    default: true,
    help: 'on | off: the API reference page at GET /v1/docs',
    type: 'on-off',
  },
] as const satisfies readonly Declaration[];

type Row = (typeof SETTINGS)[number];
/** The name of a setting, as in `Config`. */
export type SettingKey = Row['key'];
type RowOf<K extends SettingKey> = Extract<Row, { key: K }>;
type Parsed<S> = S extends { check: (raw: string) => infer T }
  ? T
  : S extends { choices: readonly (infer C)[] }
    ? C
    : S extends { type: 'integer' | 'seconds' }
      ? number
      : S extends { type: 'text' }
        ? string
        : boolean;
/** The value of a setting once resolved: undefined only for a setting that is off unless given. */
export type SettingValue<K extends SettingKey> =
  | Parsed<RowOf<K>>
  | (RowOf<K> extends { default: undefined } ? undefined : never);

/** Every setting resolved, as the command line hands it to `listen`. */
export type Settings = { [K in SettingKey]: SettingValue<K> };

/** The embedding options of the settings `K`, each optional; its default is that of its row. */
export type SettingOptions<K extends Exclude<SettingKey, RowWithOption['key']>> = {
  [P in K]?: SettingValue<P> | undefined;
};
type RowWithOption = Extract<Row, { option: string }>;

/** Every setting's default: what the command line and an embedder get when it is not given. */
export const DEFAULTS = Object.fromEntries(SETTINGS.map((s) => [s.key, s.default])) as {
  [K in SettingKey]: RowOf<K>['default'];
};
