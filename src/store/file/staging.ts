import { randomBytes } from 'node:crypto';
import { chown, mkdir, rmdir, stat } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import type { FileSystem } from '../../lib/file-system.js';
import { errorCode } from '../../lib/system-error.js';
import { SNAPSHOT_FILE } from './file-names.js';

/**
 * Where a new data directory (a backup, a restore) is written before it takes `dest`'s place: inside
 * `dest` when that is an existing (empty, checked before) directory, since its parent may be one the
 * caller cannot write to (`/var/lib` for the `petstore` user); beside it otherwise, where `dest` is
 * to be made anyway. Made private (0700) and with a name no store file has.
 */
export async function stagingDirectory(dest: string, what: string): Promise<string> {
  const target = resolve(dest);
  const inside =
    (
      await stat(target).catch((error: unknown) => {
        if (errorCode(error) === 'ENOENT') return undefined;
        throw error;
      })
    )?.isDirectory() === true;
  const name = `.${inside ? `petstore-${what}` : basename(target)}.${randomBytes(6).toString('hex')}.tmp`;
  const staging = join(inside ? target : dirname(target), name);
  await mkdir(staging, { mode: 0o700 });
  return staging;
}

/**
 * Puts what `staging` holds at `dest`, durably. A staging directory beside `dest` is renamed to it,
 * so a `dest` that exists is whole. One inside `dest` is emptied into it file by file, pets.json
 * last, so a directory cut short holds no snapshot and is refused as no store (and, not empty, by a
 * new attempt). Run by root into a directory another user owns, every file becomes that owner's:
 * the directory's server runs as that user and could not open root's 0600 files.
 */
export async function placeStaged(fs: FileSystem, staging: string, dest: string): Promise<void> {
  const target = resolve(dest);
  if (dirname(staging) !== target) {
    await fs.rename(staging, target);
    await fs.syncDir(dirname(target));
    return;
  }
  const owner = await stat(target);
  const names = (await fs.readdir(staging)).sort((a, b) => Number(a === SNAPSHOT_FILE) - Number(b === SNAPSHOT_FILE));
  for (const name of names) {
    if (process.geteuid?.() === 0 && owner.uid !== 0) await chown(join(staging, name), owner.uid, owner.gid);
    await fs.rename(join(staging, name), join(target, name));
    if (name === SNAPSHOT_FILE) await fs.syncDir(target);
  }
  await rmdir(staging);
  await fs.syncDir(target);
}
