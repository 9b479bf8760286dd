/**
 * CRC-32 made independently of lib/crc32.ts, for the tests to check it and to write checksummed
 * lines themselves: zlib's own.
 */
import * as zlib from 'node:zlib';

/** The CRC-32 of `data` as zlib computes it. */
export const referenceCrc32 = (data: Uint8Array): number => zlib.crc32(data);
