import { ReplicationError } from './destination.js';

/**
 * The one check of every key a destination reads, writes, deletes or lists: a key names an object
 * under the destination, so '/'-separated segments, none empty, '.' or '..', and no backslash, NUL
 * or leading '/'. A position or a listing is the destination's word, which an attacker with write
 * access there can forge: a key that passed only a prefix check could read a file beside the replica.
 */
export function checkedKey(key: string): string {
  const wrong = key === '' || key.includes('\\') || key.includes('\0') || key.split('/').some(isBadSegment);
  if (wrong) {
    throw new ReplicationError('damaged', `${JSON.stringify(key)} names no object under the destination; refused`);
  }
  return key;
}

/** A prefix to list under: '' (everything), or a key, possibly ending in '/'. */
export function checkedPrefix(prefix: string): string {
  if (prefix !== '') checkedKey(prefix.endsWith('/') ? prefix.slice(0, -1) : prefix);
  return prefix;
}

const isBadSegment = (segment: string): boolean => segment === '' || segment === '.' || segment === '..';
