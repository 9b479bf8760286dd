import { basename, isAbsolute, relative } from 'node:path';

/**
 * How this program was started, for help and advice: the command's name when it runs as the
 * installed command (`petstore`, a link by that name), else `node` and the path of server.js,
 * relative to the working directory when it lies below it (`node dist/server.js`).
 */
export function invocation(script = process.argv[1] ?? 'dist/server.js', cwd = process.cwd()): string {
  const name = basename(script);
  if (name !== 'server.js' && name !== 'server') return name;
  const path = relative(cwd, script);
  return `node ${path === '' || path.startsWith('..') || isAbsolute(path) ? script : path}`;
}

/** The command line that ran this process, as one would type it again. */
export function commandLine(args: readonly string[] = process.argv.slice(2)): string {
  return [invocation(), ...args.map(shellWord)].join(' ');
}

/** `word` as a POSIX shell reads it back: quoted only when it needs to be. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9_/.,:=@%+-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}
