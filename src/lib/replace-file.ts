import { randomBytes } from 'node:crypto';
import { basename, dirname, join } from 'node:path';
import type { FileSystem } from './file-system.js';
import { errorCode } from './system-error.js';

/** The temp name a replacement of `name` is written under: hidden, unique, recognisable after a crash. */
const tempName = (name: string): string => `.${name}.${randomBytes(6).toString('hex')}.tmp`;

/**
 * Replaces `path` atomically and durably: the content goes to a uniquely named temp file beside it,
 * which is fdatasync'ed, closed, renamed over `path`, and then the directory is fsync'ed so that the
 * rename itself survives a power cut. A failure at any step before the rename leaves the old file as it
 * was and removes the temp file. Returns the number of bytes written.
 */
export async function replaceFile(
  fs: FileSystem,
  path: string,
  chunks: Iterable<string | Uint8Array>,
  onCleanupError: (error: unknown) => void,
): Promise<number> {
  const dir = dirname(path);
  const temp = join(dir, tempName(basename(path)));
  const file = await fs.open(temp, 'wx');
  let renamed = false;
  try {
    let position = 0;
    for (const chunk of chunks) {
      const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
      await file.write(bytes, position);
      position += bytes.length;
    }
    await file.datasync();
    await file.close();
    await fs.rename(temp, path);
    renamed = true;
    await fs.syncDir(dir);
    return position;
  } finally {
    if (!renamed) {
      // The failure that brought us here is thrown on; these only report.
      await file.close().catch(onCleanupError);
      await fs.unlink(temp).catch((error: unknown) => {
        if (errorCode(error) !== 'ENOENT') onCleanupError(error);
      });
    }
  }
}
