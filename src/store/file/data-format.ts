import { isUtf8 } from 'node:buffer';
import { parseJson, JsonSyntaxError, type JsonValue } from '../../lib/json.js';
import type { PetStatus } from '../../pet/contract.js';
import { petJson, type Pet } from '../../pet/pet.js';
import { validateCategoryId, validateName, validateStatus, ValidationError } from '../../pet/validate.js';
import { isIdempotencyRecord, type IdempotencyRecord, type RecordSink } from './idempotency.js';
import { PetIndex } from './pet-index.js';
import { readPetLine, takeLine, withoutRecord, type PetLine } from './pet-line.js';
import { StoreOpenError } from '../store.js';

/**
 * The files of a data directory, all readable JSON:
 * - `pets.json`, the snapshot: `{"format":"petstore-pets/2","journal":G,"pets":[` then one Pet per
 *   line `]}`. It holds every pet of the journals before generation G, and journals G, G+1, … up to
 *   the newest must all be there: that makes a copy that lost a journal recognisable (see
 *   test/copy-while-running.test.ts). Format 1 (no "journal") is still read.
 * - `pets-journal.<n>.jsonl`, journals: one Pet per line, appended by each commit after the snapshot.
 *   They carry no header: their format is the directory's, named by pets.json, which every
 *   directory this version writes holds. A new journal line format must bump the snapshot format.
 * A pet's line is exactly what the API returns for it, with int64 `categoryId` digits kept exactly;
 * in format 2 a pet created with an Idempotency-Key carries one more member,
 * `"idempotency":{scope,key,at}`, while the key is within its window.
 */
const FORMAT_NAME = 'petstore-pets';
const FORMAT_VERSION = 2;
export const SNAPSHOT_FORMAT = `${FORMAT_NAME}/${FORMAT_VERSION}`;


/**
 * Receives each pet of a journal in order: its id, status and exact JSON text, `bytes[start..end)`.
 * `inFile` says the bytes are the file's own (read once, never changed), which may be kept as they are.
 */
export type PetSink = (id: number, status: PetStatus | undefined, bytes: Buffer, start: number, end: number, where: () => string, inFile: boolean) => void;

export interface Snapshot {
  /** The snapshot's pets, loaded into an index of their own. */
  index: PetIndex;
  /** The first journal generation the snapshot does not cover; undefined for format 1, which does not say. */
  journal: number | undefined;
}

/**
 * Parses and checks a whole snapshot; anything unexpected is a StoreOpenError naming the file.
 * The layout the store writes (one pet per line) is read line by line with the fast reader; a file
 * laid out differently (edited by hand) is still accepted through the general parser.
 */
export function parseSnapshot(bytes: Buffer, file: string, records: RecordSink = []): Snapshot {
  checkUtf8(bytes, file);
  // Said first, so that a newer file that this version cannot parse gets the one useful answer.
  const named = /^\s*\{\s*"format"\s*:\s*"([^"]{0,64})"/.exec(bytes.toString('latin1', 0, 100));
  if (named !== null) checkFormat(named[1], file);
  const found: RecordSink = [];
  let snapshot = readSnapshotLines(bytes, file, found);
  if (snapshot === undefined) {
    found.length = 0; // the line reader gave up part-way: the general parser reads it all again
    snapshot = parseSnapshotDocument(decodeUtf8(bytes, file), file, found);
  }
  for (const entry of found) records.push(entry);
  return snapshot;
}

/** Refuses a format this version does not read, and says so plainly when a newer version wrote it. */
function checkFormat(format: unknown, file: string): 1 | 2 {
  const version = typeof format === 'string' && format.startsWith(`${FORMAT_NAME}/`) ? format.slice(FORMAT_NAME.length + 1) : '';
  if (version === '1' || version === '2') return Number(version) as 1 | 2;
  if (/^[1-9][0-9]{0,8}$/.test(version) && Number(version) > FORMAT_VERSION) {
    throw new StoreOpenError(`${file} was written by a newer version of the server (format ${String(format)}); upgrade the server to use this data`);
  }
  throw new StoreOpenError(`${file} is not a pet store snapshot (expected "format": "${SNAPSHOT_FORMAT}")`);
}

// The first line in the store's own layout, of format 2 and of format 1.
const HEAD = /^\{"format":"petstore-pets\/(?:2","journal":([1-9][0-9]{0,14})|1"),"pets":\[$/;
const SNAPSHOT_TAIL = Buffer.from(']}');

/** The snapshot in the store's own layout, or undefined when it is laid out in any other way. */
function readSnapshotLines(bytes: Buffer, file: string, records: RecordSink): Snapshot | undefined {
  const headEnd = bytes.indexOf(0x0a);
  const head = headEnd === -1 ? null : HEAD.exec(bytes.toString('latin1', 0, Math.min(headEnd, 100)));
  if (head === null) return undefined;
  const journal = head[1] === undefined ? undefined : Number(head[1]);
  // A pet's line takes at least 36 bytes: room for them all, in typed arrays whose untouched pages cost nothing.
  const index = new PetIndex(Math.ceil(bytes.length / 36));
  const line: PetLine = { id: 0, status: undefined, end: 0, textEnd: 0, record: undefined };
  let pos = headEnd + 1;
  for (;;) {
    // The common line: one pet in the store's form, then ",\n"; read without searching for its end.
    if (readPetLine(bytes, pos, bytes.length, line) && bytes[line.end] === 0x2c && bytes[line.end + 1] === 0x0a && line.id > index.lastId) {
      takeLine(index, bytes, pos, line, records);
      pos = line.end + 2;
      continue;
    }
    let lineEnd = bytes.indexOf(0x0a, pos);
    if (lineEnd === -1) lineEnd = bytes.length;
    if (lineEnd - pos === 2 && bytes[pos] === 0x5d && bytes[pos + 1] === 0x7d) { // "]}"
      const rest = bytes.length - lineEnd;
      const lastHadComma = index.size > 0 && bytes[pos - 2] === 0x2c;
      return rest <= 1 && !lastHadComma ? { index, journal } : undefined;
    }
    if (lineEnd === bytes.length) return undefined;
    const comma = bytes[lineEnd - 1] === 0x2c;
    const contentEnd = comma ? lineEnd - 1 : lineEnd;
    if (!comma && bytes.subarray(lineEnd + 1, lineEnd + 1 + SNAPSHOT_TAIL.length).compare(SNAPSHOT_TAIL) !== 0) return undefined;
    if (readPetLine(bytes, pos, contentEnd, line) && line.end === contentEnd && line.id > index.lastId) {
      takeLine(index, bytes, pos, line, records);
    } else {
      const n = index.size + 1;
      const where = (): string => `${file}, pet #${n}`;
      const pet = parseLineIfPet(bytes.toString('utf8', pos, contentEnd), records);
      // Not one pet on this line: laid out by hand, so the general parser reads the whole file.
      if (pet === undefined) return undefined;
      appendPet(index, pet, where);
    }
    pos = lineEnd + 1;
  }
}

function parseSnapshotDocument(text: string, file: string, records: RecordSink): Snapshot {
  let document: JsonValue;
  try {
    document = parseJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new StoreOpenError(`${file} is not valid JSON: ${error.message}`, { cause: error });
    throw error;
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) {
    throw new StoreOpenError(`${file} is not a pet store snapshot (expected "format": "${SNAPSHOT_FORMAT}")`);
  }
  const version = checkFormat(document['format'], file);
  const journal = document['journal'];
  if (version === 2 && (typeof journal !== 'bigint' || journal < 1n || journal > BigInt(Number.MAX_SAFE_INTEGER))) {
    throw new StoreOpenError(`${file} has no "journal" generation (a positive integer)`);
  }
  const list = document['pets'];
  if (!Array.isArray(list)) throw new StoreOpenError(`${file} has no "pets" array`);
  const index = new PetIndex();
  for (const [i, value] of list.entries()) {
    const where = (): string => `${file}, pet #${i + 1}`;
    appendPet(index, toPet(value, where, records), where);
  }
  return { index, journal: version === 2 ? Number(journal) : undefined };
}

function checkOrder(index: PetIndex, id: number, where: () => string): void {
  if (id <= index.lastId) throw new StoreOpenError(`${where()}: id ${id} is not above the previous id ${index.lastId}`);
}

/** A pet the general parser read: its text is made again in the store's own form, and copied in. */
function appendPet(index: PetIndex, pet: Pet, where: () => string): void {
  checkOrder(index, pet.id, where);
  index.append(pet);
}

export interface JournalContents {
  /** Bytes of complete lines; a torn last line (a crash mid-append, never acknowledged) lies beyond. */
  completeLength: number;
}

/** Parses a journal. Only an unterminated final line is forgiven: it is a write that was never acknowledged. */
export function parseJournal(bytes: Buffer, file: string, onPet: PetSink, records: RecordSink = []): JournalContents {
  const end = bytes.lastIndexOf(0x0a) + 1;
  checkUtf8(bytes.subarray(0, end), file);
  const line: PetLine = { id: 0, status: undefined, end: 0, textEnd: 0, record: undefined };
  let pos = 0;
  // One function for every line, reading the current line number: not a closure made per line.
  let n = 0;
  const where = (): string => `${file}, line ${n}`;
  while (pos < end) {
    n++;
    const known = readPetLine(bytes, pos, end, line) && bytes[line.end] === 0x0a;
    const lineEnd = known ? line.end : bytes.indexOf(0x0a, pos);
    if (known && line.record === undefined) {
      onPet(line.id, line.status, bytes, pos, lineEnd, where, true);
    } else if (known) {
      records.push({ id: line.id, record: line.record as IdempotencyRecord });
      const text = withoutRecord(bytes, pos, line);
      onPet(line.id, line.status, text, 0, text.length, where, false);
    } else {
      const pet = parseLine(bytes.toString('utf8', pos, lineEnd), where, records);
      const text = Buffer.from(petJson(pet));
      onPet(pet.id, pet.status, text, 0, text.length, where, false);
    }
    pos = lineEnd + 1;
  }
  return { completeLength: end };
}

function parseLineIfPet(text: string, records: RecordSink): Pet | undefined {
  try {
    return parseLine(text, () => '', records);
  } catch (error) {
    if (error instanceof StoreOpenError) return undefined;
    throw error;
  }
}

function parseLine(text: string, where: () => string, records: RecordSink): Pet {
  let value: JsonValue;
  try {
    value = parseJson(text);
  } catch (error) {
    if (error instanceof JsonSyntaxError) throw new StoreOpenError(`${where()} is not valid JSON: ${error.message}`, { cause: error });
    throw error;
  }
  return toPet(value, where, records);
}

function checkUtf8(bytes: Buffer, file: string): void {
  if (!isUtf8(bytes)) throw new StoreOpenError(`${file} is not valid UTF-8`);
}

function decodeUtf8(bytes: Uint8Array, file: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
  } catch (error) {
    if (error instanceof TypeError) throw new StoreOpenError(`${file} is not valid UTF-8`, { cause: error });
    throw error;
  }
}

function toPet(value: JsonValue, where: () => string, records: RecordSink): Pet {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new StoreOpenError(`${where()}: not a JSON object`);
  try {
    for (const key of Object.keys(value)) {
      if (key !== 'id' && key !== 'name' && key !== 'categoryId' && key !== 'status' && key !== 'idempotency') throw new ValidationError(`unknown field "${key}"`);
    }
    const id = value['id'];
    if (typeof id !== 'bigint' || id < 1n || id > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ValidationError('field "id" must be a positive integer');
    }
    const name = validateName(value['name']);
    const categoryId = validateCategoryId(value['categoryId']);
    const status = value['status'];
    const record = value['idempotency'];
    if (record !== undefined) {
      if (!isIdempotencyRecord(record)) throw new ValidationError('field "idempotency" must be {"scope", "key", "at"}');
      records.push({ id: Number(id), record: { scope: record.scope, key: record.key, at: Number(record.at) } });
    }
    const pet: Pet = { id: Number(id), name, categoryId };
    if (status !== undefined) pet.status = validateStatus(status, 'field "status"');
    return pet;
  } catch (error) {
    if (error instanceof ValidationError) throw new StoreOpenError(`${where()}: ${error.message}`, { cause: error });
    throw error;
  }
}
