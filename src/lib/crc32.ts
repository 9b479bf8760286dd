import * as zlib from 'node:zlib';

/**
 * CRC-32 as zlib, gzip and PNG compute it (reflected polynomial 0xEDB88320, initial and final value
 * 0xFFFFFFFF), so that a stored checksum can be checked by hand with any zlib (`python3 -c "import
 * zlib; …"`). Short ranges, a pet's line, are computed here eight bytes at a time: a call into
 * zlib for each costs more than the sum itself (bench/results.md, "Why the code is shaped this way").
 * Long ranges, a whole file, go to zlib's own `crc32` (Node 20.15 and later, so every Node `engines` allows).
 */
const POLYNOMIAL = 0xedb88320;
const NATIVE_FROM_BYTES = 4096;

// Slice-by-8 tables: TABLES[k][b] is the CRC of byte b followed by k zero bytes.
const TABLES = Array.from({ length: 8 }, () => new Int32Array(256));
const T0 = TABLES[0] as Int32Array;
for (let n = 0; n < 256; n++) {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? POLYNOMIAL ^ (c >>> 1) : c >>> 1;
  T0[n] = c;
}
for (let k = 1; k < 8; k++) {
  const previous = TABLES[k - 1] as Int32Array;
  const table = TABLES[k] as Int32Array;
  for (let n = 0; n < 256; n++)
    table[n] = ((previous[n] as number) >>> 8) ^ (T0[(previous[n] as number) & 0xff] as number);
}
const [, T1, T2, T3, T4, T5, T6, T7] = TABLES as [
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
  Int32Array,
];

/**
 * The CRC-32 of `bytes[start..end)`, an unsigned 32-bit number; given `previous`, the CRC of what
 * came before, the CRC of the two together (a file written in chunks).
 */
export function crc32(bytes: Uint8Array, start = 0, end = bytes.length, previous = 0): number {
  if (end - start >= NATIVE_FROM_BYTES) return zlib.crc32(bytes.subarray(start, end), previous);
  let c = previous ^ -1;
  let i = start;
  for (; end - i >= 8; i += 8) {
    c ^=
      (bytes[i] as number) |
      ((bytes[i + 1] as number) << 8) |
      ((bytes[i + 2] as number) << 16) |
      ((bytes[i + 3] as number) << 24);
    c =
      (T7[c & 0xff] as number) ^
      (T6[(c >>> 8) & 0xff] as number) ^
      (T5[(c >>> 16) & 0xff] as number) ^
      (T4[c >>> 24] as number) ^
      (T3[bytes[i + 4] as number] as number) ^
      (T2[bytes[i + 5] as number] as number) ^
      (T1[bytes[i + 6] as number] as number) ^
      (T0[bytes[i + 7] as number] as number);
  }
  for (; i < end; i++) c = (T0[(c ^ (bytes[i] as number)) & 0xff] as number) ^ (c >>> 8);
  return (c ^ -1) >>> 0;
}

const HEX = Buffer.from('0123456789abcdef', 'latin1');

/** Writes `value` as 8 lower-case hex digits at `pos`. */
export function writeHex8(value: number, out: Uint8Array, pos: number): void {
  for (let i = 7; i >= 0; i--, value >>>= 4) out[pos + i] = HEX[value & 0xf] as number;
}

/** The 8 lower-case hex digits at `pos` as a number, or -1 when they are not exactly that. */
export function readHex8(bytes: Uint8Array, pos: number): number {
  let value = 0;
  for (let i = 0; i < 8; i++) {
    const c = bytes[pos + i];
    const digit = c === undefined ? -1 : c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x61 && c <= 0x66 ? c - 0x57 : -1;
    if (digit < 0) return -1;
    value = value * 16 + digit;
  }
  return value;
}
