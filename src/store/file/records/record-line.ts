import { crc32, readHex8, writeHex8 } from '../../../lib/crc32.js';
import { MIN_PET_BYTES } from '../../../pet/codec.js';
import type { IdempotencyRecord } from '../idempotency.js';
import type { StoredLine } from '../../pet-index.js';

/**
 * One stored pet as a line of format 3, the same in pets.json and in a journal:
 *
 *     [{"id":1,"name":"Rex",…},"8c0d4a4e"]
 *     [{"id":2,"name":"Tom",…},{"scope":"…","key":"order-17","at":1764158400000},"0f3b2a11"]
 *
 * A JSON array: the pet's text exactly as the API returns it (pet/codec.ts), the idempotency record it was created
 * with while that is within its window, and last the CRC-32 (lib/crc32.ts) of every byte of the line
 * before the checksum's opening quote, from `[` to the comma, as 8 hex digits. The pet's text is
 * served straight from these bytes; the checksum is checked when they are read from a file and
 * whenever they are copied into a new one.
 */

/** The shortest line: `[` and the shortest pet's text, then `,"xxxxxxxx"]`. */
export const MIN_LINE_BYTES = 1 + MIN_PET_BYTES + 12;

/** Where the parts of a line after the pet's text lie; positions in the line's buffer. */
export interface LineTail {
  /** The idempotency record's `{…}`, or -1 without one. */
  recordStart: number;
  recordEnd: number;
  /** The first of the checksum's 8 hex digits; the checksum covers the line up to the byte before its quote. */
  crcAt: number;
  /** Just after the line's closing `]`. */
  end: number;
}

const SCOPE = Buffer.from('{"scope":"', 'latin1');
const KEY = Buffer.from('","key":"', 'latin1');
const AT = Buffer.from('","at":', 'latin1');

/** The line of a pet whose text is `text`, with its idempotency record if given. */
export function buildLine(text: string, record: IdempotencyRecord | undefined): Buffer {
  const body = record === undefined ? `[${text},` : `[${text},${recordJson(record)},`;
  const line = Buffer.allocUnsafe(Buffer.byteLength(body) + 11);
  const covered = line.write(body, 0);
  line[covered] = 0x22; // "
  writeHex8(crc32(line, 0, covered), line, covered + 1);
  line[covered + 9] = 0x22;
  line[covered + 10] = 0x5d; // ]
  return line;
}

/** The line of `line`'s pet without its idempotency record (once the record is past its window), checksummed anew. */
export function withoutRecord(bytes: Uint8Array, textStart: number, textEnd: number): Buffer {
  return buildLine(Buffer.from(bytes.buffer, bytes.byteOffset + textStart, textEnd - textStart).toString(), undefined);
}

export function recordJson(record: IdempotencyRecord): string {
  return `{"scope":${JSON.stringify(record.scope)},"key":${JSON.stringify(record.key)},"at":${record.at}}`;
}

/**
 * The tail of a line whose pet text ends at `textEnd`: `,"xxxxxxxx"]` or `,{record},"xxxxxxxx"]`, read
 * no further than `end`; undefined when the bytes are not in that form. The record is only delimited
 * here (readRecord reads it). `out` is filled in and returned when given (a load reads a million).
 */
export function readLineTail(bytes: Uint8Array, textEnd: number, end: number, out?: LineTail): LineTail | undefined {
  let pos = textEnd;
  if (bytes[pos++] !== 0x2c) return undefined;
  let recordStart = -1;
  let recordEnd = -1;
  if (bytes[pos] === 0x7b) {
    recordStart = pos;
    recordEnd = objectEndAt(bytes, pos, end);
    if (recordEnd < 0 || bytes[recordEnd] !== 0x2c) return undefined;
    pos = recordEnd + 1;
  }
  if (pos + 10 > end || bytes[pos] !== 0x22 || bytes[pos + 9] !== 0x22 || bytes[pos + 10] !== 0x5d) return undefined;
  if (out === undefined) return { recordStart, recordEnd, crcAt: pos + 1, end: pos + 11 };
  out.recordStart = recordStart;
  out.recordEnd = recordEnd;
  out.crcAt = pos + 1;
  out.end = pos + 11;
  return out;
}

/**
 * The tail of a line read from its end, `lineEnd` (its `]`'s end): for a line that cannot be read from
 * its start, whose checksum may still say whether its bytes are what was written. Its record, if it
 * has one, is not looked for.
 */
export function tailAtEnd(bytes: Uint8Array, start: number, lineEnd: number): LineTail | undefined {
  const crcAt = lineEnd - 10;
  if (
    crcAt - 2 <= start ||
    bytes[crcAt - 2] !== 0x2c ||
    bytes[crcAt - 1] !== 0x22 ||
    bytes[lineEnd - 2] !== 0x22 ||
    bytes[lineEnd - 1] !== 0x5d
  )
    return undefined;
  return { recordStart: -1, recordEnd: -1, crcAt, end: lineEnd };
}

/** Whether the line starting at `start` matches its checksum. */
export function checksumMatches(bytes: Uint8Array, start: number, tail: LineTail): boolean {
  const stored = readHex8(bytes, tail.crcAt);
  return stored >= 0 && crc32(bytes, start, tail.crcAt - 1) === stored;
}

/**
 * Just after the `}` closing the flat JSON object that starts at `pos` (its strings may hold escaped
 * quotes and braces), or -1 when a line break or another control byte comes first.
 */
export function objectEndAt(bytes: Uint8Array, pos: number, end: number): number {
  let inString = false;
  for (pos++; pos < end; pos++) {
    const c = bytes[pos] as number;
    if (c < 0x20) return -1; // a line break or a control byte: not one line's record
    if (inString) {
      if (c === 0x5c) pos++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7d) {
      return pos + 1;
    }
  }
  return -1;
}

/** The idempotency record written at `bytes[start..end)` by recordJson, or undefined when it is not in that form. */
export function readRecord(bytes: Uint8Array, start: number, end: number): IdempotencyRecord | undefined {
  let pos = expect(bytes, start, SCOPE);
  if (pos < 0) return undefined;
  const scopeStart = pos;
  while (pos < end && isScopeChar(bytes[pos] as number)) pos++;
  if (pos === scopeStart || pos - scopeStart > 64) return undefined;
  const scope = Buffer.from(bytes.buffer, bytes.byteOffset + scopeStart, pos - scopeStart).toString('latin1');
  pos = expect(bytes, pos, KEY);
  if (pos < 0) return undefined;
  const keyStart = pos;
  let escapes = false;
  for (; pos < end && bytes[pos] !== 0x22; pos++) {
    const c = bytes[pos] as number;
    if (c === 0x5c) {
      escapes = true;
      const next = bytes[++pos];
      if (next !== 0x22 && next !== 0x5c) return undefined;
    } else if (c < 0x20 || c > 0x7e) {
      return undefined;
    }
  }
  // One string made from the bytes at once (a string built a character at a time is a rope of them).
  const raw = Buffer.from(bytes.buffer, bytes.byteOffset + keyStart, pos - keyStart).toString('latin1');
  const key = escapes ? raw.replace(/\\(["\\])/g, '$1') : raw;
  if (key.length === 0 || key.length > 255) return undefined;
  pos = expect(bytes, pos, AT);
  if (pos < 0) return undefined;
  const atStart = pos;
  let at = 0;
  while (pos < end && (bytes[pos] as number) >= 0x30 && (bytes[pos] as number) <= 0x39 && pos - atStart < 16)
    at = at * 10 + ((bytes[pos++] as number) - 0x30);
  if (
    pos === atStart ||
    (pos - atStart > 1 && bytes[atStart] === 0x30) ||
    at > Number.MAX_SAFE_INTEGER ||
    bytes[pos] !== 0x7d ||
    pos + 1 !== end
  )
    return undefined;
  return { scope, key, at };
}

function isScopeChar(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x2d || c === 0x5f;
}

/** Position after `token` if it is at `pos`, otherwise -1. */
function expect(bytes: Uint8Array, pos: number, token: Uint8Array): number {
  for (let i = 0; i < token.length; i++) if (bytes[pos + i] !== token[i]) return -1;
  return pos + token.length;
}

/** The idempotency record a stored pet's line carries (PetIndex.lineOf); undefined for none or no such pet. */
export function recordOfLine(line: StoredLine | undefined): IdempotencyRecord | undefined {
  if (line === undefined) return undefined;
  const tail = readLineTail(line.bytes, line.textEnd, line.bytes.length);
  return tail === undefined || tail.recordStart < 0
    ? undefined
    : readRecord(line.bytes, tail.recordStart, tail.recordEnd);
}
