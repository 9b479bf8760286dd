/**
 * CRC-32 made independently of lib/crc32.ts, for the tests to check it and to write checksummed
 * lines themselves: zlib's own, which Node has from 20.15 and 22.2; before that (the suite on the
 * oldest Node engines allows), the same sum one bit at a time, as its definition reads.
 */
import * as zlib from 'node:zlib';

function bitByBit(data: Uint8Array): number {
  let c = 0xffffffff;
  for (const byte of data) {
    c ^= byte;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  }
  return (c ^ 0xffffffff) >>> 0;
}

/** The CRC-32 of `data` as zlib computes it. */
export const referenceCrc32: (data: Uint8Array) => number = typeof zlib.crc32 === 'function' ? (data) => zlib.crc32(data) : bitByBit;
