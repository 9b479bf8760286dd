import * as crypto from 'node:crypto';

/*
 * SHA-256 of a short text (an API key), on every request that carries one. crypto.hash, the one-shot
 * form, exists from Node 20.12 and 21.7 on; before (Node 18.19, 20.11) createHash gives the same digest.
 */
const oneShot = (crypto as { hash?: (algorithm: string, data: string, encoding: 'buffer') => Buffer }).hash;

/** The SHA-256 digest of `text` (UTF-8). */
export const sha256 = oneShot === undefined
  ? (text: string): Buffer => crypto.createHash('sha256').update(text).digest()
  : (text: string): Buffer => oneShot('sha256', text, 'buffer');
