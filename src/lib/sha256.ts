import { hash } from 'node:crypto';

/**
 * The SHA-256 digest of `text` (UTF-8): an API key, on every request that carries one. The one-shot
 * form makes no Hash object per call; every Node engines allows has it.
 */
export const sha256 = (text: string): Buffer => hash('sha256', text, 'buffer');
