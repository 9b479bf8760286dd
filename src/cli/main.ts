/**
 * The command line: `node dist/server.js [options]` serves the API; `keys …` manages API keys.
 * A thin wrapper over `listen()`: it reads flags and environment, prints, and handles signals.
 */
import { parseArgs } from 'node:util';
import { envKeys, helpText, resolveConfig, resolveSetting, SETTINGS, UsageError } from './config.js';
import { keyFilePath, readKeyFile } from '../auth/key-file.js';
import { keyFileStorage, runKeysCommand } from './keys-command.js';
import { listen } from '../service/listen.js';
import { jsonLogger } from '../lib/logger.js';
import { StoreOpenError } from '../store/store.js';

const options = {
  help: { type: 'boolean' },
  label: { type: 'string' },
  ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: 'string' }])),
} as const;

async function main(args: readonly string[]): Promise<void> {
  const { values, positionals } = parseArgs({ args: [...args], options, allowPositionals: true, strict: true });
  if (values.help === true) {
    process.stdout.write(helpText());
    return;
  }
  const flags = values as Record<string, string | undefined>;
  const label = values.label as string | undefined;
  if (label !== undefined && !(positionals[0] === 'keys' && positionals[1] === 'create')) throw new UsageError('--label applies only to "keys create"');
  const out = (line: string): void => void process.stdout.write(line + '\n');
  const databaseUrl = resolveSetting('databaseUrl', flags, process.env);
  if (positionals[0] === 'keys' && databaseUrl !== undefined) {
    const { runDatabaseKeysCommand } = await import('./database-command.js');
    await runDatabaseKeysCommand(databaseUrl, positionals.slice(1), label, out);
    return;
  }
  if (positionals[0] === 'keys') {
    const dataDir = resolveSetting('dataDir', flags, process.env);
    await runKeysCommand(keyFileStorage(dataDir), positionals.slice(1), label, out);
    return;
  }
  if (positionals[0] === 'migrate') {
    const { runMigrateCommand } = await import('./database-command.js');
    await runMigrateCommand(resolveSetting('dataDir', flags, process.env), databaseUrl, positionals.slice(1), out);
    return;
  }
  const config = resolveConfig(flags, process.env);
  if (positionals.length > 0) throw new UsageError(`unknown command "${positionals[0]}"`);

  const logger = jsonLogger(config.logLevel);
  const keys = envKeys(process.env);
  const running = await listen({
    ...config,
    keys,
    logger,
    onKeyGenerated: (key) => {
      process.stderr.write(
        `No API key was configured, so one was generated. It is shown only this once; ` +
        `only its SHA-256 hash is kept in ${config.databaseUrl === undefined ? `${config.dataDir}/keys.json` : 'the database'}:\n\n  ${key}\n\n`,
      );
    },
  });
  logger.info('listening', { url: `${running.url}/v1`, dataDir: config.dataDir, pid: process.pid });
  if (keys.length === 0 && config.databaseUrl === undefined && (readKeyFile(keyFilePath(config.dataDir)) ?? []).length === 0) {
    logger.error(`no API key is configured: every request under /v1 is refused until one is created with "keys create"`);
  }

  const stop = (signal: string): void => {
    logger.info('stopping', { signal });
    running.close().then(
      // close() has already written out the gathered request lines (createPetstore's close flushes its logger).
      () => process.exit(0),
      (error: unknown) => {
        logger.error('stopped with an error; the journal holds every acknowledged pet', error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

/** Runs the command line with `args` (without node and the script); exits the process on failure. */
export function runCommandLine(args: readonly string[]): void {
  main(args).catch(exitWithError);
}

function exitWithError(error: unknown): void {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    process.stderr.write(`error: ${error.message}\nRun with --help to see every option.\n`);
    process.exit(2);
  }
  const known = error instanceof StoreOpenError || (error instanceof Error && 'code' in error && typeof error.code === 'string');
  process.stderr.write(`cannot start: ${known ? (error as Error).message : String((error as Error)?.stack ?? error)}\n`);
  process.exit(1);
}
