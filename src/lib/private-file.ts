import {
  chmodSync,
  closeSync,
  constants,
  fstatSync,
  openSync,
  readdirSync,
  readFileSync,
  statSync,
  type Stats,
} from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
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

/**
 * Throws an UnsafeFileError unless `stats` is a regular file or directory (`kind`) that only this user
 * or root can change; a file only `reading`, as root, may also be the directory owner's (see readableByRoot).
 */
function assertPrivate(path: string, stats: Stats, kind: 'file' | 'directory', reading = false): void {
  if (kind === 'file' ? !stats.isFile() : !stats.isDirectory()) {
    throw new UnsafeFileError(`${path} is not a regular ${kind}; refusing to use it until it is one`);
  }
  if ((stats.mode & 0o022) !== 0) {
    throw new UnsafeFileError(
      `${path} is writable by group or others (mode ${(stats.mode & 0o7777).toString(8)}); refusing to use it until ` +
        `it is not (chmod go-w)`,
    );
  }
  // Root's files are trusted too, so that an administrator's `keys create` as root does not lock the service out.
  const uid = process.getuid?.();
  if (uid !== undefined && stats.uid !== uid && stats.uid !== 0 && !(reading && readableByRoot(path, stats))) {
    // No chown advised: a file of the service user's given to root or to another user is one its server can no longer
    // use.
    throw new UnsafeFileError(
      `${path} is owned by uid ${stats.uid}, neither this user (uid ${uid}) nor root; refusing to use it: run this ` +
        `as the user it belongs to (uid ${stats.uid})`,
    );
  }
}

/**
 * Root reading a file of the user who owns its directory, such as `keys list`, `verify` or `backup`
 * run as root on the service user's data directory: only that user (or root) could have put it
 * there, and reading it changes nothing that user's server relies on. Writing stays refused.
 */
function readableByRoot(path: string, stats: Stats): boolean {
  return process.geteuid?.() === 0 && statSync(dirname(path)).uid === stats.uid;
}

/** The data directory (a symlink to it is the operator's choice and is followed), if only its owner can change it. */
export function assertPrivateDirectory(path: string): void {
  assertPrivate(path, statSync(path), 'directory');
}

/**
 * The data directory, made private first when that is safe: one of this user's that others may
 * enter but that holds nothing yet — nothing at all, or the `.gitkeep` of a fresh clone, which git
 * makes 0775 under umask 002 — is made 0700, as a directory the server makes is, and its old mode
 * returned, to be said in the log. Then it must be private (assertPrivateDirectory): one that holds
 * anything and that others may write to is refused as before, since another user could have put it there.
 */
export function claimPrivateDirectory(path: string): number | undefined {
  const stats = statSync(path);
  const holdsNothing = (): boolean => readdirSync(path).every((name) => name === '.gitkeep');
  let tightened: number | undefined;
  if (stats.isDirectory() && (stats.mode & 0o077) !== 0 && stats.uid === process.getuid?.() && holdsNothing()) {
    chmodSync(path, 0o700);
    // Nobody else can add a file from now on; one added before the chmod is caught here.
    if (!holdsNothing()) {
      chmodSync(path, stats.mode & 0o7777);
      throw new UnsafeFileError(
        `${path} was writable by group or others, and files appeared in it while it was being made private; refusing ` +
          `to use it (chmod go-w, and check what is in it)`,
      );
    }
    tightened = stats.mode & 0o7777;
  }
  assertPrivateDirectory(path);
  return tightened;
}

/** Opens a private regular file (see assertPrivate) without following a symlink at its name. */
export async function openPrivate(path: string, flags: number, mode = 0o600): Promise<FileHandle> {
  const handle = await open(path, flags | NO_FOLLOW, mode).catch((error: unknown) => {
    throw symlinkRefused(path, error);
  });
  try {
    assertPrivate(path, await handle.stat(), 'file', (flags & (constants.O_WRONLY | constants.O_RDWR)) === 0);
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
    assertPrivate(path, fstatSync(fd), 'file', true);
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}

function symlinkRefused(path: string, error: unknown): unknown {
  return errorCode(error) === 'ELOOP'
    ? new UnsafeFileError(`${path} is a symbolic link; refusing to follow it: put the file itself there`, {
        cause: error,
      })
    : error;
}
