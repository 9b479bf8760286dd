import { closeSync, constants, fstatSync, openSync, readFileSync, statSync, type Stats } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { errorCode } from './system-error.js';

/**
 * A file or directory that someone besides this server's user (or root) could have written: a
 * symlink planted at its name, a world-writable key file, another user's journal. Its message names it.
 */
export class UnsafeFileError extends Error {
  readonly code = 'ERR_UNSAFE_FILE';
}

// O_NOFOLLOW: a symlink at the name is refused (ELOOP), never followed; O_NONBLOCK: a FIFO planted
// there cannot hang the open (it has no effect on regular files).
const NO_FOLLOW = constants.O_NOFOLLOW | constants.O_NONBLOCK;

/** Throws an UnsafeFileError unless `stats` is a regular file or directory (`kind`) that only this user or root can change. */
function assertPrivate(path: string, stats: Stats, kind: 'file' | 'directory'): void {
  if (kind === 'file' ? !stats.isFile() : !stats.isDirectory()) {
    throw new UnsafeFileError(`${path} is not a regular ${kind}; refusing to use it until it is one`);
  }
  if ((stats.mode & 0o022) !== 0) {
    throw new UnsafeFileError(`${path} is writable by group or others (mode ${(stats.mode & 0o7777).toString(8)}); refusing to use it until it is not (chmod go-w)`);
  }
  // Root's files are trusted too, so that an administrator's `keys create` as root does not lock the service out.
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid && stats.uid !== 0) {
    throw new UnsafeFileError(`${path} is owned by uid ${stats.uid}, neither this server's user (uid ${uid}) nor root; refusing to use it: if it is this server's, give it to this user (chown ${uid} ${path})`);
  }
}

/** The data directory (a symlink to it is the operator's choice and is followed), if only its owner can change it. */
export function assertPrivateDirectory(path: string): void {
  assertPrivate(path, statSync(path), 'directory');
}

/** Opens a private regular file (see assertPrivate) without following a symlink at its name. */
export async function openPrivate(path: string, flags: number, mode = 0o600): Promise<FileHandle> {
  const handle = await open(path, flags | NO_FOLLOW, mode).catch((error: unknown) => {
    throw symlinkRefused(path, error);
  });
  try {
    assertPrivate(path, await handle.stat(), 'file');
    return handle;
  } catch (error) {
    await handle.close();
    throw error;
  }
}

/** The content of a private regular file, or undefined when there is none (for the key file, read on requests). */
export function readPrivateFileSync(path: string): Buffer | undefined {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | NO_FOLLOW);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw symlinkRefused(path, error);
  }
  try {
    assertPrivate(path, fstatSync(fd), 'file');
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function symlinkRefused(path: string, error: unknown): unknown {
  return errorCode(error) === 'ELOOP' ? new UnsafeFileError(`${path} is a symbolic link; refusing to follow it: put the file itself there`, { cause: error }) : error;
}
