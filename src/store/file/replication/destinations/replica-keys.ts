import { createHash, randomBytes } from 'node:crypto';
import { open, readFile, rename, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { errorCode } from '../../../../lib/system-error.js';
import { ReplicationError } from './destination.js';

/** A 256-bit key that seals replicas (sealed-destination.ts), and its id, which sealed objects carry in clear. */
export interface ReplicaKey {
  id: Buffer;
  key: Buffer;
}

const KEY_LINE = /^[A-Za-z0-9_-]{43}$/;

// The id is a hash of the key under a label of its own: it names the key without telling anything of it.
const keyId = (key: Buffer): Buffer =>
  createHash('sha256').update('petstore replica key id\0').update(key).digest().subarray(0, 8);

export const keyIdText = (key: ReplicaKey): string => key.id.toString('hex');

/**
 * The keys of a key file (--replicate-key-file): one per line, base64url, the first the one that
 * seals; the others only open what older keys sealed (rotation). Refused, saying why, when the file is
 * missing, readable by others, or holds anything else.
 */
export async function readReplicaKeys(path: string): Promise<ReplicaKey[]> {
  let text: string;
  try {
    const mode = (await stat(path)).mode;
    if ((mode & 0o077) !== 0) {
      const octal = (mode & 0o777).toString(8);
      throw new ReplicationError('refused', `the key file ${path} may be read by others (mode ${octal}); chmod 600 it`);
    }
    text = await readFile(path, 'utf8');
  } catch (error) {
    if (errorCode(error) === 'ENOENT') {
      throw new ReplicationError('not_found', `there is no key file ${path} (--replicate-key-file)`);
    }
    throw error;
  }
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  if (lines.length === 0 || !lines.every((line) => KEY_LINE.test(line))) {
    throw new ReplicationError(
      'refused',
      `${path} is not a key file: one 256-bit key a line, as "replicate-key create" writes`,
    );
  }
  return lines.map((line) => {
    const key = Buffer.from(line, 'base64url');
    return { id: keyId(key), key };
  });
}

/**
 * Writes a new key into `path` (0600): a new file, or, with `rotate`, the first line of an existing
 * one, whose keys stay below it for reading what they sealed. Returns the new key's id.
 */
export async function writeReplicaKey(path: string, rotate: boolean): Promise<string> {
  const key = randomBytes(32);
  const older = rotate ? (await readReplicaKeys(path)).map((k) => k.key.toString('base64url')) : [];
  const target = rotate ? `${path}.${randomBytes(6).toString('hex')}.tmp` : path;
  const handle = await open(target, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL, 0o600);
  try {
    await handle.writeFile([key.toString('base64url'), ...older, ''].join('\n'));
    await handle.sync();
  } finally {
    await handle.close();
  }
  if (rotate) await rename(target, path);
  return keyId(key).toString('hex');
}
