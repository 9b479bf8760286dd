import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { SETTINGS } from '../service/settings.js';
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
  ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: s.type === 'switch' ? 'boolean' : 'string' }])),
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
      const option = /^Unknown option '([^']*)'/.exec(error instanceof Error ? error.message : '')?.[1] ?? '';
      const near = option.startsWith('--') ? nearestOption(option.slice(2)) : undefined;
      throw new UsageError(
        `unknown option ${option}`.trimEnd() + (near === undefined ? '' : `; did you mean --${near}?`),
      );
    }
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE')
      throw new UsageError((error as Error).message.replace(/'/g, ''));
    throw error;
  }
}

/**
 * The known option `name` most likely meant: the one it begins, else the nearest within two edits, or
 * a quarter of its length when longer (a swap of neighbours counts one: `prot` → `port`); undefined when none is that
 * near.
 */
function nearestOption(name: string): string | undefined {
  const names = Object.keys(OPTIONS);
  const begun = names.filter((known) => known.startsWith(name));
  if (name.length >= 3 && begun.length === 1) return begun[0];
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(name.length / 4)) + 1;
  for (const known of names) {
    const distance = editDistance(name, known);
    if (distance < bestDistance) [best, bestDistance] = [known, distance];
  }
  return best;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number): number => rows[i]?.[j] ?? 0;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, at(i - 2, j - 2) + 1);
      (rows[i] as number[])[j] = d;
    }
  }
  return at(a.length, b.length);
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
  const hint =
    env.npm_lifecycle_event === 'start'
      ? '; to pass flags through npm start, put -- before them: npm start -- --port 9000'
      : '';
  return new UsageError(`unknown command "${name}"${hint}`);
}
