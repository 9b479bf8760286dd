import { INT64_MAX, INT64_MIN, NAME_MAX_LENGTH, PET_STATUSES, type PetStatus } from '../../pet/contract.js';
import type { IdempotencyRecord } from './idempotency.js';
import { objectEndAt, readRecord as readStoredRecord } from './record-line.js';

/**
 * A fast reader for the one line format the store itself writes, `petJson(pet)`:
 * `{"id":1,"name":"Rex","categoryId":7,"status":"sold"}`. Start-up with a million pets must take
 * well under two seconds, and a general JSON parse of that many lines takes longer than that.
 * Such a line is exactly the pet's JSON text, whose bytes the store then keeps as they are.
 * Anything not in exactly that form (a name with escapes, a
 * hand-edited line) returns undefined and goes through the strict general parser instead, which also
 * reports what is wrong.
 */
const ID = bytes('{"id":');
const NAME = bytes(',"name":"');
const CATEGORY = bytes('","categoryId":');
const STATUS = bytes(',"status":"');
const RECORD_MEMBER = bytes(',"idempotency":');
const STATUS_TEXTS = PET_STATUSES.map((status) => ({ status, bytes: bytes(status) }));

/** What readPetLine found on a line it accepted. */
export interface PetLine {
  id: number;
  status: PetStatus | undefined;
  /** Just after the line's closing brace. */
  end: number;
  /** Where the pet's own text stops: `end - 1` but for a line with an idempotency record after it. */
  textEnd: number;
  /** The idempotency record the pet was created with, if the line carries one. */
  record: IdempotencyRecord | undefined;
}

/**
 * True, with `out` filled in, when a valid pet in the store's own form starts at `start` and ends
 * by `end`: the caller checks what follows `out.end` (a line end, a comma), so that a file is read
 * in one pass without first searching for every line's end.
 */
export function readPetLine(buf: Buffer, start: number, end: number, out: PetLine): boolean {
  let pos = expect(buf, start, ID);
  if (pos < 0) return false;
  let id = 0;
  const idStart = pos;
  while (pos < end && isDigit(buf[pos] as number) && pos - idStart < 15) id = id * 10 + ((buf[pos++] as number) - 0x30);
  if (pos === idStart || buf[idStart] === 0x30) return false;
  pos = expect(buf, pos, NAME);
  if (pos < 0) return false;
  let nameLength = 0; // in UTF-16 units, counted from the (already validated) UTF-8 bytes
  for (;; pos++) {
    if (pos >= end) return false;
    const c = buf[pos] as number;
    if (c === 0x22) break;
    if (c === 0x5c || c < 0x20) return false; // escapes: left to the general parser
    if ((c & 0xc0) !== 0x80) nameLength++; // not a continuation byte: a character begins
    if (c >= 0xf0) nameLength++; // four bytes: a surrogate pair in UTF-16
  }
  pos = expect(buf, pos, CATEGORY);
  if (pos < 0) return false;
  const negative = buf[pos] === 0x2d;
  if (negative) pos++;
  const digitsStart = pos;
  while (pos < end && isDigit(buf[pos] as number)) pos++;
  const digits = pos - digitsStart;
  if (digits === 0 || digits > 19 || (digits > 1 && buf[digitsStart] === 0x30) || (negative && digits === 1 && buf[digitsStart] === 0x30)) return false;
  // Fifteen digits or fewer are always inside int64; only longer ones need an exact comparison.
  if (digits > 15) {
    const categoryId = BigInt(buf.toString('latin1', digitsStart - (negative ? 1 : 0), pos));
    if (categoryId < INT64_MIN || categoryId > INT64_MAX) return false;
  }
  let status: PetStatus | undefined;
  if (buf[pos] === 0x2c && buf[pos + 2] === 0x73) { // ,"s…: the status
    pos = expect(buf, pos, STATUS);
    if (pos < 0) return false;
    status = statusAt(buf, pos);
    if (status === undefined || buf[pos + status.length] !== 0x22) return false;
    pos += status.length + 1;
  }
  // The pet's own text ends here; a line of a keyed create carries its idempotency record after it.
  const textEnd = pos;
  let record: IdempotencyRecord | undefined;
  if (buf[pos] === 0x7d) {
    pos++;
  } else {
    const read = readRecord(buf, pos, end);
    if (read === undefined) return false;
    [record, pos] = read;
  }
  // Only a pet that is certainly valid is taken here; anything doubtful goes to the general parser.
  if (pos > end || nameLength === 0 || nameLength > NAME_MAX_LENGTH) return false;
  out.id = id;
  out.status = status;
  out.end = pos;
  out.textEnd = textEnd;
  out.record = record;
  return true;
}

/**
 * `,"idempotency":{…}}`, the member a format-2 line carried its record in, at `pos`: the record and the
 * position after it. The object is the one format 3 writes on its own (record-line.ts).
 */
function readRecord(buf: Buffer, pos: number, end: number): [IdempotencyRecord, number] | undefined {
  pos = expect(buf, pos, RECORD_MEMBER);
  if (pos < 0) return undefined;
  const close = objectEndAt(buf, pos, end);
  const record = close < 0 || buf[close] !== 0x7d ? undefined : readStoredRecord(buf, pos, close);
  return record === undefined ? undefined : [record, close + 1];
}

/**
 * The status whose text is at `pos`, or undefined. Compared as bytes, not decoded: a million lines
 * would make a million short strings; and a plain loop, not a callback, which would make a closure per line.
 */
function statusAt(buf: Buffer, pos: number): PetStatus | undefined {
  for (let i = 0; i < STATUS_TEXTS.length; i++) {
    const candidate = STATUS_TEXTS[i] as { status: PetStatus; bytes: Buffer };
    if (expect(buf, pos, candidate.bytes) > 0) return candidate.status;
  }
  return undefined;
}

function bytes(text: string): Buffer {
  return Buffer.from(text, 'latin1');
}

/** Position after `token` if it is at `pos`, otherwise -1. */
function expect(buf: Buffer, pos: number, token: Buffer): number {
  for (let i = 0; i < token.length; i++) if (buf[pos + i] !== token[i]) return -1;
  return pos + token.length;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
