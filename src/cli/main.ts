/**
 * The command line: `node dist/server.js [options]` serves the API; `keys …` manages API keys;
 * `backup <dest>` copies the data directory; `migrate` copies it into a database.
 * A thin wrapper over `listen()`: it reads flags and environment, prints, and handles signals.
 * Each command's module is loaded when that command runs: `keys list` need not load the server.
 */
import { commandWords, packageVersion, parseCommandLine, unknownCommand, type CommandLine } from './args.js';
import { helpText, resolveConfig, resolveSetting } from './config.js';
import { UsageError } from './errors.js';
import { failure } from './failure.js';
import { commandLine, invocation } from './invocation.js';
import { UnsafeFileError } from '../lib/private-file.js';
import { errorCode } from '../lib/system-error.js';
import { nodeVersionProblem } from './node-version.js';
import { databaseUrlWarning } from './secret-arguments.js';
import type { NewKeyOptions } from './keys-command.js';
import { FailedStart } from './failed-start.js';

type Values = CommandLine['values'];
type Flags = Record<string, string | undefined>;
const print = (line: string): void => void process.stdout.write(`${line}\n`);

async function main(args: readonly string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(args);
  if (positionals.length > 0 || values.help === true || values.version === true) endQuietlyWhenReaderGoes();
  if (values.help === true) {
    process.stdout.write(helpText(invocation()));
    return;
  }
  if (values.version === true) {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  const flags = values as Flags;
  if (positionals[0] === 'webhooks') return webhooksCommand(args, values, flags, positionals.slice(1));
  if (values.status !== undefined) throw new UsageError('--status applies only to "webhooks add"');
  const newKey = newKeyOptions(values, flags, positionals);
  const databaseUrl = resolveSetting('databaseUrl', flags, process.env);
  const passwordWarning = databaseUrlWarning(flags['database-url']);
  if (passwordWarning !== undefined && positionals.length > 0) process.stderr.write(`warning: ${passwordWarning}\n`);
  if (positionals[0] === 'keys' && databaseUrl !== undefined) {
    const { runDatabaseKeysCommand } = await import('./database-command.js');
    await runDatabaseKeysCommand(databaseUrl, positionals.slice(1), newKey, print);
    return;
  }
  if (positionals[0] === 'keys') {
    const { keyFileStorage, runKeysCommand } = await import('./keys-command.js');
    const storage = keyFileStorage(resolveSetting('dataDir', flags, process.env), commandLine(args));
    await runKeysCommand(storage, positionals.slice(1), newKey, print);
    return;
  }
  if (positionals[0] === 'replicate-key') {
    const { runReplicateKeyCommand } = await import('./replicate-key-command.js');
    await runReplicateKeyCommand(positionals.slice(1), print);
    return;
  }
  if (positionals[0] === 'backup') {
    const { runBackupCommand } = await import('./backup-command.js');
    await runBackupCommand(resolveSetting('dataDir', flags, process.env), positionals.slice(1), print);
    return;
  }
  if (await restoreOrVerify(values, flags, positionals)) return;
  if (positionals[0] === 'repair') {
    const { runRepairCommand } = await import('./repair-command.js');
    await runRepairCommand(resolveSetting('dataDir', flags, process.env), positionals.slice(1), print);
    return;
  }
  if (positionals[0] === 'migrate') {
    const { runMigrateCommand } = await import('./database-command.js');
    const dataDir = resolveSetting('dataDir', flags, process.env);
    await runMigrateCommand(dataDir, databaseUrl, positionals.slice(1), print, commandLine(args));
    return;
  }
  const config = resolveConfig(flags, process.env);
  if (positionals[0] !== undefined) throw unknownCommand(positionals[0], process.env);
  const { serve } = await import('./serve-command.js');
  await serve(config, process.env, passwordWarning);
}

/** `webhooks …`: on the database with --database-url, else in the data directory. */
async function webhooksCommand(args: readonly string[], values: Values, flags: Flags, words: string[]): Promise<void> {
  const { runWebhooksCommand, subscriptionFileStorage } = await import('./webhooks-command.js');
  const options = {
    label: flags.label,
    statuses: values.status as string[] | undefined,
    from: flags.from,
    allowHttp: resolveSetting('webhooksAllowHttp', flags, process.env),
  };
  const databaseUrl = resolveSetting('databaseUrl', flags, process.env);
  if (databaseUrl !== undefined) {
    const { runDatabaseWebhooksCommand } = await import('./database-command.js');
    await runDatabaseWebhooksCommand(databaseUrl, words, options, print);
    return;
  }
  const storage = subscriptionFileStorage(resolveSetting('dataDir', flags, process.env), commandLine(args));
  await runWebhooksCommand(storage, words, options, print);
}

/** The new key's flags, refused on any command but `keys create`. */
function newKeyOptions(values: Values, flags: Flags, positionals: readonly string[]): NewKeyOptions {
  const creating = positionals[0] === 'keys' && positionals[1] === 'create';
  // --rate-limit serves the server too; for keys create it is the new key's own (PETSTORE_RATE_LIMIT is not).
  const newKey: NewKeyOptions = {
    label: values.label as string | undefined,
    scopes: values.scope as string[] | undefined,
    rateLimit: creating ? flags['rate-limit'] : undefined,
  };
  if (newKey.label !== undefined && !creating)
    throw new UsageError('--label applies only to "keys create" and "webhooks add"');
  if (newKey.scopes !== undefined && !creating) throw new UsageError('--scope applies only to "keys create"');
  return newKey;
}

/**
 * `restore`, and `verify` of a replica (--from) or of the data directory; refuses the replica's flags
 * on any other command. Returns whether it ran one.
 */
async function restoreOrVerify(values: Values, flags: Flags, positionals: readonly string[]): Promise<boolean> {
  const from = values.from as string | undefined;
  const until = values.until as string | undefined;
  const lineage = values.lineage as string | undefined;
  const list = values.list === true;
  if (
    (from !== undefined && positionals[0] !== 'restore' && positionals[0] !== 'verify') ||
    (until !== undefined && positionals[0] !== 'restore')
  ) {
    throw new UsageError(
      from !== undefined ? '--from applies only to "restore" and "verify"' : '--until applies only to "restore"',
    );
  }
  if ((lineage !== undefined || list) && positionals[0] !== 'restore')
    throw new UsageError('--lineage and --list apply only to "restore"');
  if (positionals[0] === 'restore') {
    const keyFile = resolveSetting('replicateKeyFile', flags, process.env);
    const { runRestoreCommand } = await import('./restore-command.js');
    await runRestoreCommand(positionals.slice(1), { from, until, lineage, list, keyFile }, print);
    return true;
  }
  if (positionals[0] === 'verify' && from !== undefined) {
    const keyFile = resolveSetting('replicateKeyFile', flags, process.env);
    const { runReplicaVerify } = await import('./restore-command.js');
    process.exitCode = await runReplicaVerify(positionals.slice(1), from, keyFile, print);
    return true;
  }
  if (positionals[0] === 'verify') {
    const { runVerifyCommand } = await import('./verify-command.js');
    process.exitCode = await runVerifyCommand(
      resolveSetting('dataDir', flags, process.env),
      positionals.slice(1),
      print,
    );
    return true;
  }
  return false;
}

/** Runs the command line with `args` (without node and the script); exits the process on failure. */
export function runCommandLine(args: readonly string[]): void {
  const tooOld = nodeVersionProblem(process.versions.node);
  if (tooOld !== undefined) {
    process.stderr.write(`${failedWhat(args)}: ${tooOld}\n`);
    process.exit(1);
  }
  main(args).catch((error: unknown) => {
    const { status, text } = failure(error instanceof FailedStart ? error.reason : error, failedWhat(args));
    process.stderr.write(text + (error instanceof FailedStart ? error.epilogue : ''));
    process.exit(commandWords(args)[0] === 'verify' && !readIt(error) ? 2 : status);
  });
}

/**
 * A command's reader that stops early (`keys list | head -1`) closes the pipe: the rest goes unread,
 * as with any Unix tool, with the command's own exit status and without a stack on stderr. Not for
 * the server, whose stop must stay the signal's.
 */
function endQuietlyWhenReaderGoes(): void {
  process.stdout.on('error', (error: unknown) => {
    if (errorCode(error) !== 'EPIPE') throw error;
    process.exit();
  });
}

/**
 * Whether a failed `verify` read the data it judged: its exit 1 means damage alone, so a file it was
 * refused or could not read (a permission, a system error) exits 2, as a wrong --data-dir does.
 */
function readIt(error: unknown): boolean {
  const cause = error instanceof Error ? error.cause : undefined;
  const systemCode = (e: unknown): boolean => /^E[A-Z]+$/.test(errorCode(e) ?? '');
  return !(
    error instanceof UnsafeFileError ||
    cause instanceof UnsafeFileError ||
    systemCode(error) ||
    systemCode(cause)
  );
}

const COMMANDS: Record<string, string> = {
  backup: 'backup failed',
  'replicate-key': 'replicate-key failed',
  restore: 'restore failed',
  verify: 'verify failed',
  repair: 'repair failed',
  migrate: 'migrate failed',
  'keys create': 'keys create failed',
  'keys list': 'keys list failed',
  'keys revoke': 'keys revoke failed',
  'webhooks add': 'webhooks add failed',
  'webhooks list': 'webhooks list failed',
  'webhooks remove': 'webhooks remove failed',
  'webhooks rotate-secret': 'webhooks rotate-secret failed',
  'webhooks replay': 'webhooks replay failed',
};

/** How a failure of the command in `args` begins: `cannot start` for the server, `<command> failed` for the others. */
function failedWhat(args: readonly string[]): string {
  const [first = '', second = ''] = commandWords(args);
  const commandFailed = first === 'keys' || first === 'webhooks' ? `${first} failed` : 'cannot start';
  return COMMANDS[`${first} ${second}`] ?? COMMANDS[first] ?? commandFailed;
}
