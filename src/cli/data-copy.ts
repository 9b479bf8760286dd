import { lstat, readdir, realpath, rm } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { keyFilePath, readKeyFile, writeKeyFile } from '../auth/key-file.js';
import { makeDirectory, type FileSystem } from '../lib/file-system.js';
import { errorCode, reportToStderr } from '../lib/system-error.js';
import { SNAPSHOT_FILE, journalGeneration } from '../store/file/file-names.js';
import { placeStaged, stagingDirectory } from '../store/file/staging.js';

/**
 * What `backup` and `repair` share: a new data directory made from the one in `dataDir`, whole or not
 * at all. It carries a code, as Node's own errors do, so that the command line shows its message alone.
 */
export class CopyRefused extends Error {
  readonly code = 'ERR_PETSTORE_COPY';

  constructor(message: string) {
    super(message);
    this.name = 'CopyRefused';
  }
}

/** A directory without pets.json or a journal holds no store: a mistyped --data-dir must not look like a good copy. */
export async function checkSource(fs: FileSystem, dataDir: string, what: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dataDir);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR') throw error;
    throw new CopyRefused(`there is no data directory ${dataDir}`);
  }
  if (!names.some((name) => name === SNAPSHOT_FILE || journalGeneration(name) !== undefined)) {
    throw new CopyRefused(
      `${dataDir} holds no pet store (no pets.json, no journal): nothing to ${what}; is --data-dir right?`,
    );
  }
}

/**
 * Checks, before anything is copied, that `dest` may become a new data directory made from the one in
 * `dataDir`: it lies outside `dataDir`, where the server would take it for part of the store; it is
 * not a symbolic link (the copy is renamed into place, which would replace the link, not fill its
 * target); and it does not exist or is an empty directory.
 */
export async function checkDestination(dest: string, dataDir: string, what: string): Promise<void> {
  const stats = await lstat(dest).catch((error: unknown) => {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw error;
  });
  const [source, target] = await Promise.all([realPathOf(dataDir), realPathOf(dest)]);
  const path = relative(source, target);
  if (path !== '..' && !path.startsWith(`..${sep}`))
    throw new CopyRefused(`${dest} is inside the data directory ${dataDir}; ${what} goes outside it`);
  if (stats?.isSymbolicLink() === true)
    throw new CopyRefused(`${dest} is a symbolic link; give the directory it points to, or a new path`);
  if (stats !== undefined && !stats.isDirectory()) throw new CopyRefused(`${dest} exists and is not a directory`);
  if (stats !== undefined && (await readdir(dest)).length > 0)
    throw new CopyRefused(`${dest} is not empty; ${what} goes into a new or empty directory`);
}

/**
 * The real path of `path`, also when it does not exist yet: its nearest existing ancestor resolved, the rest appended.
 */
async function realPathOf(path: string): Promise<string> {
  const absolute = resolve(path);
  try {
    return await realpath(absolute);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT' || dirname(absolute) === absolute) throw error;
    return join(await realPathOf(dirname(absolute)), basename(absolute));
  }
}

/**
 * Makes `dest` a new data directory: `fill` writes the store into a staging directory (staging.ts),
 * the key file of `dataDir` is copied in, and the whole is put in place last and made durable.
 * Returns the number of API key hashes copied.
 */
export async function writeDataDirectory(
  fs: FileSystem,
  dataDir: string,
  dest: string,
  fill: (dir: string) => Promise<void>,
): Promise<number> {
  await makeDirectory(fs, dirname(resolve(dest)));
  const temp = await stagingDirectory(dest, 'copy');
  let placed = false;
  try {
    const keys = readKeyFile(keyFilePath(dataDir));
    if (keys !== undefined) await writeKeyFile(fs, keyFilePath(temp), keys);
    await fill(temp);
    // A directory beside an empty dest replaces it whole; one that got files meanwhile makes this fail (ENOTEMPTY).
    await placeStaged(fs, temp, dest);
    placed = true;
    return keys?.length ?? 0;
  } finally {
    if (!placed) await rm(temp, { recursive: true, force: true }).catch(reportToStderr);
  }
}

/** `1 pet`, `2 pets`: `count` with `noun`, plural (`plural`, or noun + s) unless it is one. */
export function counted(count: number | bigint, noun: string, plural = `${noun}s`): string {
  return `${count} ${count === 1 || count === 1n ? noun : plural}`;
}
