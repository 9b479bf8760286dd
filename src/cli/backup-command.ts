import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { keyFilePath, readKeyFile, writeKeyFile } from '../auth/key-file.js';
import { makeDirectory, nodeFileSystem, type FileSystem } from '../lib/file-system.js';
import { errorCode, reportToStderr } from '../lib/system-error.js';
import { readLiveDirectory, writeStoreCopy } from '../store/file/backup.js';
import { SNAPSHOT_FILE, journalGeneration } from '../store/file/file-names.js';
import { UsageError } from './config.js';
import { checkDestination } from './destination.js';

/** The destination cannot take a backup (it holds files, or is not a directory). */
export class BackupRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BackupRefused';
  }
}

/**
 * `backup <dest>`: a consistent, compacted, durable copy of the data directory `dataDir`, which a
 * server may be running on, that a server started on `dest` serves exactly. It is made in a temp
 * directory beside `dest` and renamed into place last, so a `dest` that exists is a whole backup.
 */
export async function runBackupCommand(dataDir: string, args: readonly string[], out: (line: string) => void, fs: FileSystem = nodeFileSystem): Promise<void> {
  const [dest, ...extra] = args;
  if (dest === undefined || extra.length > 0) throw new UsageError('usage: backup <dest-dir> [--data-dir <dir>]');
  await checkIsStore(fs, dataDir);
  await checkDestination(dest, dataDir, 'a backup');
  const parent = dirname(resolve(dest));
  await makeDirectory(fs, parent);
  const temp = join(parent, `.${basename(resolve(dest))}.${randomBytes(6).toString('hex')}.tmp`);
  await mkdir(temp, { mode: 0o700 });
  let placed = false;
  try {
    const live = await readLiveDirectory(fs, dataDir);
    const keys = readKeyFile(keyFilePath(dataDir));
    if (keys !== undefined) await writeKeyFile(fs, keyFilePath(temp), keys);
    await writeStoreCopy(fs, temp, live, reportToStderr);
    // An empty directory is replaced whole; one that got files meanwhile makes this fail (ENOTEMPTY).
    await fs.rename(temp, dest);
    placed = true;
    await fs.syncDir(parent);
    out(`backed up ${live.index.size} pets (last id ${live.index.lastId}) and ${keys?.length ?? 0} API key hashes from ${dataDir} to ${dest}`);
  } finally {
    if (!placed) await rm(temp, { recursive: true, force: true }).catch(reportToStderr);
  }
}

/** A directory without pets.json or a journal holds no store: a mistyped --data-dir must not look like a good backup. */
async function checkIsStore(fs: FileSystem, dataDir: string): Promise<void> {
  let names: string[];
  try {
    names = await fs.readdir(dataDir);
  } catch (error) {
    if (errorCode(error) !== 'ENOENT' && errorCode(error) !== 'ENOTDIR') throw error;
    throw new BackupRefused(`there is no data directory ${dataDir}`);
  }
  if (!names.some((name) => name === SNAPSHOT_FILE || journalGeneration(name) !== undefined)) {
    throw new BackupRefused(`${dataDir} holds no pet store (no pets.json, no journal): nothing to back up; is --data-dir right?`);
  }
}
