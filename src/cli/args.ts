import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SETTINGS } from './config.js';
import { UsageError } from './errors.js';

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean' },
  label: { type: 'string' },
  scope: { type: 'string', multiple: true },
  status: { type: 'string', multiple: true },
  from: { type: 'string' },
  until: { type: 'string' },
  lineage: { type: 'string' },
  list: { type: 'boolean' },
  ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: 'boolean' in s ? 'boolean' : 'string' }])),
} as const;

export interface CommandLine {
  /** Flag values by flag name (without `--`); booleans for --help and --version, every value given for --scope. */
  values: Record<string, string | boolean | string[] | undefined>;
  positionals: string[];
}

/**
 * Parses the arguments strictly. Node's own messages for an unknown or incomplete option carry an
 * unbalanced quote and advice about positionals; ours name the option and stop there.
 */
export function parseCommandLine(args: readonly string[]): CommandLine {
  try {
    return parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    const code = error instanceof TypeError && 'code' in error ? error.code : undefined;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      throw new UsageError(`unknown option ${/^Unknown option '([^']*)'/.exec(error instanceof Error ? error.message : '')?.[1] ?? ''}`.trimEnd());
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') throw new UsageError((error as Error).message.replace(/'/g, ''));
    throw error;
  }
}

/** The command words of `args` (`keys`, `create`), read leniently: to name a command whose flags were refused. */
export function commandWords(args: readonly string[]): string[] {
  return parseArgs({ args: [...args], options: OPTIONS, allowPositionals: true, strict: false }).positionals;
}

/** The package's version, from the package.json beside `dist/` (also in an installed package). */
export function packageVersion(): string {
  const text = readFileSync(join(__dirname, '../../package.json'), 'utf8');
  return (JSON.parse(text) as { version: string }).version;
}

/**
 * `npm start --port 9000` (without `--`) gives npm the flag and us only `9000`: say how to pass it on.
 * npm sets npm_lifecycle_event for the scripts it runs.
 */
export function unknownCommand(name: string, env: NodeJS.ProcessEnv): UsageError {
  const hint = env['npm_lifecycle_event'] === 'start' ? '; to pass flags through npm start, put -- before them: npm start -- --port 9000' : '';
  return new UsageError(`unknown command "${name}"${hint}`);
}
