/**
 * The command line: `node dist/server.js [options]` serves the API; `keys …` manages API keys;
 * `backup <dest>` copies the data directory.
 * A thin wrapper over `listen()`: it reads flags and environment, prints, and handles signals.
 */
import { packageVersion, parseCommandLine, unknownCommand } from './args.js';
import { runBackupCommand } from './backup-command.js';
import { runRepairCommand } from './repair-command.js';
import { runVerifyCommand } from './verify-command.js';
import { envKeys, helpText, resolveConfig, resolveSetting } from './config.js';
import { CommandError, UsageError } from './errors.js';
import { isLoopback, readTlsFiles } from './tls.js';
import { KeyFileError, keyFilePath, readKeyFile } from '../auth/key-file.js';
import { keyFileStorage, runKeysCommand } from './keys-command.js';
import { listen } from '../service/listen.js';
import { jsonLogger } from '../lib/logger.js';
import { StoreOpenError } from '../store/store.js';

async function main(args: readonly string[]): Promise<void> {
  const { values, positionals } = parseCommandLine(args);
  if (values['help'] === true) {
    process.stdout.write(helpText());
    return;
  }
  if (values['version'] === true) {
    process.stdout.write(`${packageVersion()}\n`);
    return;
  }
  const flags = values as Record<string, string | undefined>;
  const label = values['label'] as string | undefined;
  if (label !== undefined && !(positionals[0] === 'keys' && positionals[1] === 'create')) throw new UsageError('--label applies only to "keys create"');
  const print = (line: string): void => void process.stdout.write(line + '\n');
  const databaseUrl = resolveSetting('databaseUrl', flags, process.env);
  if (positionals[0] === 'keys' && databaseUrl !== undefined) {
    const { runDatabaseKeysCommand } = await import('./database-command.js');
    await runDatabaseKeysCommand(databaseUrl, positionals.slice(1), label, print);
    return;
  }
  if (positionals[0] === 'keys') {
    await runKeysCommand(keyFileStorage(resolveSetting('dataDir', flags, process.env)), positionals.slice(1), label, print);
    return;
  }
  if (positionals[0] === 'backup') {
    const dataDir = resolveSetting('dataDir', flags, process.env);
    await runBackupCommand(dataDir, positionals.slice(1), print).catch((error: unknown) => exitWithError(error, 'backup failed'));
    return;
  }
  if (positionals[0] === 'verify') {
    const code = await runVerifyCommand(resolveSetting('dataDir', flags, process.env), positionals.slice(1), print).catch((error: unknown) => exitWithError(error, 'verify failed'));
    process.exitCode = code ?? 1;
    return;
  }
  if (positionals[0] === 'repair') {
    const dataDir = resolveSetting('dataDir', flags, process.env);
    await runRepairCommand(dataDir, positionals.slice(1), print).catch((error: unknown) => exitWithError(error, 'repair failed'));
    return;
  }
  if (positionals[0] === 'migrate') {
    const { runMigrateCommand } = await import('./database-command.js');
    await runMigrateCommand(resolveSetting('dataDir', flags, process.env), databaseUrl, positionals.slice(1), print);
    return;
  }
  const config = resolveConfig(flags, process.env);
  if (positionals[0] !== undefined) throw unknownCommand(positionals[0], process.env);

  const logger = jsonLogger(config.logLevel);
  const keys = envKeys(process.env);
  const tls = readTlsFiles(config.tlsCert, config.tlsKey);
  const running = await listen({
    ...config,
    tls,
    keys,
    logger,
    onKeyGenerated: (key) => {
      process.stderr.write(
        `No API key was configured, so one was generated. It is shown only this once; ` +
        `only its SHA-256 hash is kept in ${config.databaseUrl === undefined ? `${config.dataDir}/keys.json` : 'the database'}:\n\n  ${key}\n\n`,
      );
    },
  });
  const where = config.databaseUrl === undefined ? { dataDir: config.dataDir } : { database: 'PostgreSQL' };
  let stopping = false;
  const stop = (signal: string): void => {
    // A second signal must not end the process by signal half-way (journal and lock left behind).
    if (stopping) {
      logger.info('already stopping; finishing the requests in flight', { signal });
      return;
    }
    stopping = true;
    logger.info('stopping', { signal });
    const started = Date.now();
    running.close().then(
      // close() has already written out the gathered request lines (createPetstore's close flushes its logger).
      () => {
        logger.info('stopped', { signal, ms: Date.now() - started, ...where, result: 'requests in flight finished, store closed and durable, lock released' });
        process.exit(0);
      },
      (error: unknown) => {
        logger.error('stopped with an error; the journal holds every acknowledged pet', error);
        process.exit(1);
      },
    );
  };
  // Before the line that says it listens: whoever reads that line may signal at once.
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  logger.info('listening', { url: `${running.url}${config.basePath ?? ''}/v1`, ...where, pid: process.pid });
  if (tls === undefined && !isLoopback(config.host)) {
    logger.error(`warning: serving plain HTTP on ${config.host}: bearer keys travel in clear; use --tls-cert and --tls-key, or a TLS proxy in front`);
  }
  if (keys.length === 0 && config.databaseUrl === undefined && (readKeyFile(keyFilePath(config.dataDir)) ?? []).length === 0) {
    logger.error(`no API key is configured: every request under /v1 is refused until one is created with "keys create"`);
  }
}

/** Runs the command line with `args` (without node and the script); exits the process on failure. */
export function runCommandLine(args: readonly string[]): void {
  main(args).catch(exitWithError);
}

function exitWithError(error: unknown, what = 'cannot start'): void {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    process.stderr.write(`error: ${error.message}\nRun with --help to see every option.\n`);
    process.exit(2);
  }
  if (error instanceof CommandError) {
    process.stderr.write(`error: ${error.message}\n`);
    process.exit(1);
  }
  const known = error instanceof StoreOpenError || error instanceof KeyFileError
    || (error instanceof Error && 'code' in error && typeof error.code === 'string');
  process.stderr.write(`${what}: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
}
