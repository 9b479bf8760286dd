import { mkdir, realpath } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { UnsafeFileError, claimPrivateDirectory } from '../../../../lib/private-file.js';
import { errorCode } from '../../../../lib/system-error.js';
import { ReplicationError, type Destination } from './destination.js';
import { DirectoryDestination, type DirectoryCalls } from './directory-destination.js';
import { S3Destination } from './s3-destination.js';
import { s3Settings } from './s3-location.js';

export interface OpenOptions {
  /** Where AWS_* are read from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Told a warning about the destination (plain HTTP beyond this machine). */
  warn?: (message: string) => void;
  /** A directory destination's file calls (tests). */
  calls?: DirectoryCalls;
}

/**
 * The destination `raw` names (--replicate-to): `s3://bucket/prefix` (s3-location.ts), or a directory path, made
 * private (0700) and checked
 * like the data directory, and never the data directory or inside it, where the server would take
 * its files for part of the store; refused with what to fix when it cannot be used.
 */
export async function openDestination(
  raw: string,
  dataDir: string | undefined,
  options: OpenOptions = {},
): Promise<Destination> {
  if (raw.startsWith('s3://')) {
    const { location, credentials } = s3Settings(raw, options.env ?? process.env, options.warn ?? (() => {}));
    return new S3Destination(location, credentials);
  }
  if (/^[A-Za-z][A-Za-z0-9+.-]*:\/\//.test(raw)) {
    throw new ReplicationError(
      'refused',
      `--replicate-to ${raw.replace(/\/\/[^@/]*@/, '//…@')}: a directory path or s3://<bucket>/<prefix>`,
    );
  }
  const dir = resolve(raw);
  try {
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const real = await realpath(dir);
    if (dataDir !== undefined) {
      const data = await realpath(resolve(dataDir));
      const path = relative(data, real);
      if (path === '' || !(path === '..' || path.startsWith(`..${sep}`) || isAbsolute(path))) {
        throw new ReplicationError(
          'refused',
          `--replicate-to ${raw} is the data directory or inside it; replicas go elsewhere, best on another machine ` +
            `or disk`,
        );
      }
    }
    claimPrivateDirectory(real);
  } catch (error) {
    if (error instanceof ReplicationError) throw error;
    const code = errorCode(error);
    // An unsafe directory (another user's, one others may write to) says so in words; its code alone says nothing.
    const why = code === undefined || error instanceof UnsafeFileError ? (error as Error).message : code;
    throw new ReplicationError('refused', `--replicate-to ${raw} cannot be used: ${why}`, { cause: error });
  }
  return new DirectoryDestination(dir, options.calls);
}
