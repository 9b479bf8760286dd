import { isUtf8 } from 'node:buffer';
import { parseJson, JsonSyntaxError, type JsonValue } from '../../../lib/json.js';
import type { PetStatus } from '../../../pet/contract.js';
import { petJson, readPet, storedPet, type PetBytes } from '../../../pet/codec.js';
import type { Pet } from '../../../pet/pet.js';
import { ValidationError } from '../../../pet/validate.js';
import { checkFormat } from './data-format.js';
import { isIdempotencyRecord, type IdempotencyRecord } from '../idempotency.js';
import { PetIndex } from '../../pet-index.js';
import { buildLine, objectEndAt, readRecord } from './record-line.js';
import { StoreOpenError } from '../../store.js';

/**
 * Formats 1 and 2, written by earlier versions, still read: pets.json was
 * `{"format":"petstore-pets/2","journal":G,"pets":[` then one pet per line `]}` (format 1 without
 * "journal"), a journal one pet per line, and a keyed create's line carried its record as one more
 * member, `"idempotency":{scope,key,at}`. Nothing in them is checksummed: each pet is checked as a
 * create would be and given a line of format 3 (record-line.ts) with a checksum made now, so that the
 * store writes them in format 3 at once. Anything unexpected is a StoreOpenError naming the place.
 */

// The first line in the store's own layout, of format 2 and of format 1.
const HEAD = /^\{"format":"petstore-pets\/(?:2","journal":([1-9][0-9]{0,14})|1"),"pets":\[$/;
const SNAPSHOT_END = Buffer.from(']}');
/** How a format-2 line carried its idempotency record: one more member after the pet's fields. */
const RECORD_MEMBER = Buffer.from(',"idempotency":', 'latin1');

/** What readPetLine found on a line it accepted. */
interface PetLine extends PetBytes {
  /** Just after the line's closing brace. */
  end: number;
  /** The idempotency record the pet was created with, if the line carries one. */
  record: IdempotencyRecord | undefined;
}

/** A legacy pets.json, its pets in an index of their own; `journal` as in format 3 (undefined for format 1). */
export function readLegacySnapshot(
  bytes: Buffer,
  file: string,
  keyed: number[],
): { index: PetIndex; journal: number | undefined } {
  if (!isUtf8(bytes)) throw new StoreOpenError(`${file} is not valid UTF-8`);
  const found: number[] = [];
  const read = readSnapshotLines(bytes, file, found);
  if (read !== undefined) {
    keyed.push(...found);
    return read;
  }
  // The line reader gave up part-way: the general parser reads it all again.
  return parseSnapshotDocument(bytes.toString('utf8'), file, keyed);
}

/** The snapshot in the store's own layout, or undefined when it is laid out in any other way (then parsed whole). */
function readSnapshotLines(
  bytes: Buffer,
  file: string,
  keyed: number[],
): { index: PetIndex; journal: number | undefined } | undefined {
  const headEnd = bytes.indexOf(0x0a);
  const head = headEnd === -1 ? null : HEAD.exec(bytes.toString('latin1', 0, Math.min(headEnd, 100)));
  if (head === null) return undefined;
  const index = new PetIndex(Math.ceil(bytes.length / 36));
  const line: PetLine = { id: 0, status: undefined, fieldsEnd: 0, end: 0, record: undefined };
  for (let pos = headEnd + 1, n = 1; ; n++) {
    let lineEnd = bytes.indexOf(0x0a, pos);
    if (lineEnd === -1) lineEnd = bytes.length;
    if (lineEnd - pos === 2 && bytes[pos] === 0x5d && bytes[pos + 1] === 0x7d) {
      // "]}"
      const lastHadComma = index.size > 0 && bytes[pos - 2] === 0x2c;
      return bytes.length - lineEnd <= 1 && !lastHadComma
        ? { index, journal: head[1] === undefined ? undefined : Number(head[1]) }
        : undefined;
    }
    if (lineEnd === bytes.length) return undefined;
    const comma = bytes[lineEnd - 1] === 0x2c;
    const contentEnd = comma ? lineEnd - 1 : lineEnd;
    if (!comma && bytes.subarray(lineEnd + 1, lineEnd + 1 + SNAPSHOT_END.length).compare(SNAPSHOT_END) !== 0)
      return undefined;
    const where = (): string => `${file}, pet #${n}`;
    if (readPetLine(bytes, pos, contentEnd, line) && line.end === contentEnd) {
      take(index, line.id, line.status, petText(bytes, pos, line), line.record, keyed, where);
    } else {
      const read = parseLineIfPet(bytes.toString('utf8', pos, contentEnd));
      // Not one pet on this line: laid out by hand, so the general parser reads the whole file.
      if (read === undefined) return undefined;
      take(index, read.pet.id, read.pet.status, petJson(read.pet), read.record, keyed, where);
    }
    pos = lineEnd + 1;
  }
}

function parseSnapshotDocument(
  text: string,
  file: string,
  keyed: number[],
): { index: PetIndex; journal: number | undefined } {
  const document = parseOrRefuse(text, () => file);
  if (document === null || typeof document !== 'object' || Array.isArray(document))
    throw new StoreOpenError(`${file} is not a pet store snapshot`);
  const version = checkFormat(document.format, file);
  if (version === 3 || version === 4)
    throw new StoreOpenError(`${file} names format ${version} but is not laid out as format ${version} is`);
  const journal = document.journal;
  if (version === 2 && (typeof journal !== 'bigint' || journal < 1n || journal > BigInt(Number.MAX_SAFE_INTEGER))) {
    throw new StoreOpenError(`${file} has no "journal" generation (a positive integer)`);
  }
  const list = document.pets;
  if (!Array.isArray(list)) throw new StoreOpenError(`${file} has no "pets" array`);
  const index = new PetIndex();
  for (const [i, value] of list.entries()) {
    const where = (): string => `${file}, pet #${i + 1}`;
    const { pet, record } = toPet(value, where);
    take(index, pet.id, pet.status, petJson(pet), record, keyed, where);
  }
  return { index, journal: version === 2 ? Number(journal) : undefined };
}

/**
 * Reads a legacy journal into `index`, after the pets already there: `skipUpTo` leaves out the pets a
 * format-1 snapshot already holds. Only an unterminated final line is forgiven (a create never
 * acknowledged); returns the length of the complete lines.
 */
export function readLegacyJournal(
  bytes: Buffer,
  file: string,
  index: PetIndex,
  skipUpTo: number,
  keyed: number[],
): number {
  const end = bytes.lastIndexOf(0x0a) + 1;
  if (!isUtf8(bytes.subarray(0, end))) throw new StoreOpenError(`${file} is not valid UTF-8`);
  const line: PetLine = { id: 0, status: undefined, fieldsEnd: 0, end: 0, record: undefined };
  for (let pos = 0, n = 1; pos < end; n++) {
    const where = (): string => `${file}, line ${n}`;
    const lineEnd = bytes.indexOf(0x0a, pos);
    if (readPetLine(bytes, pos, lineEnd, line) && line.end === lineEnd) {
      if (line.id > skipUpTo) take(index, line.id, line.status, petText(bytes, pos, line), line.record, keyed, where);
    } else {
      const { pet, record } = parseLine(bytes.toString('utf8', pos, lineEnd), where);
      if (pet.id > skipUpTo) take(index, pet.id, pet.status, petJson(pet), record, keyed, where);
    }
    pos = lineEnd + 1;
  }
  return end;
}

/**
 * True, with `out` filled in, when a pet in the store's own form starts at `start` (the codec's fast
 * reader), closed by its `}` or first carrying its record as format 2 did, and ends by `end`.
 */
function readPetLine(bytes: Buffer, start: number, end: number, out: PetLine): boolean {
  if (!readPet(bytes, start, end, out, false)) return false;
  let close = out.fieldsEnd;
  out.record = undefined;
  if (bytes[close] !== 0x7d) {
    for (let i = 0; i < RECORD_MEMBER.length; i++) if (bytes[close + i] !== RECORD_MEMBER[i]) return false;
    const recordStart = close + RECORD_MEMBER.length;
    const recordEnd = objectEndAt(bytes, recordStart, end);
    if (recordEnd < 0 || bytes[recordEnd] !== 0x7d) return false;
    out.record = readRecord(bytes, recordStart, recordEnd);
    if (out.record === undefined) return false;
    close = recordEnd;
  }
  out.end = close + 1;
  return out.end <= end;
}

/** The pet's own text of a line the fast reader took: its record, if any, left out. */
function petText(bytes: Buffer, start: number, line: PetLine): string {
  if (line.record === undefined) return bytes.toString('utf8', start, line.end);
  return `${bytes.toString('utf8', start, line.fieldsEnd)}}`;
}

/** Adds a pet, in ascending id order, with a line of format 3 made for it now. */
function take(
  index: PetIndex,
  id: number,
  status: PetStatus | undefined,
  text: string,
  record: IdempotencyRecord | undefined,
  keyed: number[],
  where: () => string,
): void {
  if (id <= index.lastId) throw new StoreOpenError(`${where()}: id ${id} is not above the previous id ${index.lastId}`);
  const line = buildLine(text, record);
  index.appendLine(id, status, line, 0, line.length, 1, 1 + Buffer.byteLength(text));
  if (record !== undefined) keyed.push(id);
}

function parseOrRefuse(text: string, where: () => string): JsonValue {
  try {
    return parseJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError)
      throw new StoreOpenError(`${where()} is not valid JSON: ${error.message}`, { cause: error });
    throw error;
  }
}

/** A pet read by the general parser, and the record its line carried as a member. */
interface ReadPet {
  pet: Pet;
  record: IdempotencyRecord | undefined;
}

function parseLine(text: string, where: () => string): ReadPet {
  return toPet(parseOrRefuse(text, where), where);
}

function parseLineIfPet(text: string): ReadPet | undefined {
  try {
    return parseLine(text, () => '');
  } catch (error) {
    if (error instanceof StoreOpenError) return undefined;
    throw error;
  }
}

function toPet(value: JsonValue, where: () => string): ReadPet {
  try {
    const pet = storedPet(value, 'idempotency');
    const record = (value as Record<string, JsonValue>).idempotency;
    if (record === undefined) return { pet, record };
    if (!isIdempotencyRecord(record)) throw new ValidationError('field "idempotency" must be {"scope", "key", "at"}');
    return { pet, record: { scope: record.scope, key: record.key, at: Number(record.at) } };
  } catch (error) {
    if (error instanceof ValidationError) throw new StoreOpenError(`${where()}: ${error.message}`, { cause: error });
    throw error;
  }
}
