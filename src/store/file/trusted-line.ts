import { PET_STATUSES, type PetStatus } from '../../pet/contract.js';
import { objectEndAt } from './record-line.js';

/** Where a vouched-for line's parts are; filled in by readTrustedLine. */
export interface TrustedLine {
  id: number;
  status: PetStatus | undefined;
  textEnd: number;
  /** The idempotency record's `{…}`, or -1 without one. */
  recordStart: number;
  recordEnd: number;
  /** Just after the line's closing `]`. */
  end: number;
}

const [AVAILABLE, PENDING, SOLD] = PET_STATUSES;
// `[{"id":` before the id, `,"name":"` before the name, `","categoryId":` after it, `,"status":"` before a status.
const ID_AT = 7;
const NAME_AFTER_ID = 9;
const CATEGORY_AFTER_NAME = 15;
const STATUS_AT = 11;
const CHECKSUM_TAIL = 12; // ,"xxxxxxxx"]

/**
 * Finds the parts of a record line (record-line.ts) whose bytes a checksum has already vouched for,
 * the whole snapshot's: they are exactly what the store wrote, so nothing is validated again and the
 * fixed tokens are stepped over, not compared; only the few bytes that tell where the next part
 * begins are looked at. This is what makes start-up with checksums no dearer than it was without
 * them. False when even those bytes are not as the store writes them (then the line is read the
 * careful way).
 */
export function readTrustedLine(buf: Buffer, pos: number, out: TrustedLine): boolean {
  if (buf[pos] !== 0x5b || buf[pos + 1] !== 0x7b) return false;
  let p = pos + ID_AT;
  let id = 0;
  for (let c = buf[p] as number; c >= 0x30 && c <= 0x39; c = buf[++p] as number) id = id * 10 + (c - 0x30);
  // Ids are safe integers (16 digits at most): one past them was not written by the store.
  if (p === pos + ID_AT || id > Number.MAX_SAFE_INTEGER) return false;
  p += NAME_AFTER_ID;
  // The name: up to its closing quote; an escaped quote is stepped over with its backslash.
  for (let c = buf[p] as number; c !== 0x22; c = buf[++p] as number) {
    if (c === 0x5c) p++;
    else if (c === undefined) return false;
  }
  p += CATEGORY_AFTER_NAME;
  for (let c = buf[p] as number; c !== 0x2c && c !== 0x7d; c = buf[++p] as number) if (c === undefined) return false;
  let status: PetStatus | undefined;
  if (buf[p] === 0x2c) {
    const first = buf[p + STATUS_AT];
    status = first === 0x61 ? AVAILABLE : first === 0x70 ? PENDING : first === 0x73 ? SOLD : undefined;
    if (status === undefined) return false;
    p += STATUS_AT + status.length + 1;
  }
  if (buf[p] !== 0x7d || buf[p + 1] !== 0x2c) return false;
  out.textEnd = ++p;
  out.recordStart = -1;
  out.recordEnd = -1;
  if (buf[p + 1] === 0x7b) {
    out.recordStart = ++p;
    p = objectEndAt(buf, p, buf.length);
    if (p < 0) return false;
    out.recordEnd = p;
  }
  if (buf[p + CHECKSUM_TAIL - 1] !== 0x5d) return false;
  out.id = id;
  out.status = status;
  out.end = p + CHECKSUM_TAIL;
  return true;
}
