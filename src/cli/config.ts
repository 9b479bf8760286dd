import { parseGivenKey } from '../auth/keyring.js';
import { SETTINGS, type Settings } from '../service/settings.js';
import { UsageError } from './errors.js';

export { UsageError } from './errors.js';

/** Everything the command line configures. Each setting has a flag and an environment twin; the flag wins. */
export type Config = Settings;

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

/** Reads `raw` as the setting `s` says, or refuses it naming `source`, the flag or the variable it came from. */
function parse(s: (typeof SETTINGS)[number], raw: string, source: string): unknown {
  const { min = 0, max = Number.MAX_SAFE_INTEGER } = s as { min?: number; max?: number };
  switch (s.type) {
    case 'integer': {
      const value = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
      if (!(value >= min && value <= max))
        throw new UsageError(`${source} must be an integer from ${min} to ${max}, got "${raw}"`);
      return value;
    }
    case 'seconds': {
      const value = /^[0-9]+(\.[0-9]+)?$/.test(raw) ? Number(raw) : NaN;
      if (!(value >= min && value <= max))
        throw new UsageError(`${source} must be a number of seconds from ${min} to ${max}, got "${raw}"`);
      return value;
    }
    case 'text':
      if (raw === '') throw new UsageError(`${source} must not be empty`);
      return raw;
    case 'switch':
      if (raw !== 'true' && raw !== 'false') throw new UsageError(`${source} must be true or false, got "${raw}"`);
      return raw === 'true';
    case 'on-off':
      if (raw !== 'on' && raw !== 'off') throw new UsageError(`${source} must be on or off, got "${raw}"`);
      return raw === 'on';
    case 'choice':
      if (!(s.choices as readonly string[]).includes(raw))
        throw new UsageError(`${source} must be one of ${s.choices.join(', ')}, got "${raw}"`);
      return raw;
    case 'checked':
      return embedderCheck<unknown>(s.check)(raw, source);
  }
}

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
  const s = SETTINGS.find((candidate) => candidate.key === key) as (typeof SETTINGS)[number];
  const flag = flags[s.flag];
  const fromEnv = env[s.env];
  if (flag !== undefined) return parse(s, s.type === 'switch' ? 'true' : flag, `--${s.flag}`) as Config[K];
  if (fromEnv !== undefined && fromEnv !== '') return parse(s, fromEnv, s.env) as Config[K];
  return s.default as Config[K];
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
    const flag = `  --${s.flag}${s.type === 'switch' ? '' : ' <value>'}`;
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
