import { INT64_MAX, INT64_MIN, NAME_MAX_LENGTH, PET_FIELDS, PET_STATUSES } from './contract.js';
import type { Pet, PetStatus } from './contract.js';
import { parseJson, type JsonObject, type JsonValue } from '../lib/json.js';
import { validateCategoryId, validateName, validateStatus, ValidationError } from './validate.js';

/**
 * A pet's JSON text, the bytes the API answers and the stores keep, written and read from the field
 * table in contract.ts alone: `{"id":1,"name":"Rex","categoryId":7,"status":"sold"}`, the fields in
 * the table's order, an optional one left out when the pet has none. One writer; one fast reader of
 * the bytes the writer makes, which gives up on anything else; one general reader that parses and
 * checks any JSON and says what is wrong.
 */

/** What readPet found: the pet's id and status, and where its last field ends. */
export interface PetBytes {
  id: number;
  status: PetStatus | undefined;
  /** Just after the last field: the text's closing `}`, or a member an older format added after it. */
  fieldsEnd: number;
}

type Kind = (typeof PET_FIELDS)[number]['kind'];
type FieldValue = string | number | bigint | undefined;

const ID = 0;
const TEXT = 1;
const INT64 = 2;
const STATUS = 3;
const KIND_CODES: Readonly<Record<Kind, number>> = { id: ID, text: TEXT, int64: INT64, status: STATUS };
/** The text before each field's value: `{"id":`, `,"name":`, … */
const KEY_TEXTS = PET_FIELDS.map((field, i) => `${i === 0 ? '{' : ','}"${field.name}":`);
// Parallel arrays, not objects: the reader's loop then reads numbers, not properties.
const KEYS = KEY_TEXTS.map((key) => Buffer.from(key, 'latin1'));
const KINDS = Uint8Array.from(PET_FIELDS, (field) => KIND_CODES[field.kind]);
const OPTIONAL = PET_FIELDS.map((field) => field.optional);
const NAMES: readonly string[] = PET_FIELDS.map((field) => field.name);
const STATUS_BYTES = PET_STATUSES.map((status) => Buffer.from(status, 'latin1'));
/** The bytes of each kind's shortest value: `1`, `"a"`, `0`, a status in quotes. */
const SHORTEST_VALUE: Readonly<Record<Kind, number>> = {
  id: 1,
  text: 3,
  int64: 1,
  status: 2 + Math.min(...PET_STATUSES.map((status) => status.length)),
};
const MAX_ID_DIGITS = 16;
/** Fifteen digits or fewer are always inside int64; only longer ones need an exact comparison. */
const SURE_INT64_DIGITS = 15;
const MAX_INT64_DIGITS = 19;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const ZERO = 0x30;
const COMMA = 0x2c;
const CLOSE = 0x7d;

const LAST = PET_FIELDS.length - 1;
/**
 * Each status's closing bytes, `,"status":"sold"}`, while the status is the last field: then the end of
 * a text the writer wrote tells its status (a JSON string holds no bare quote, so no other field ends so).
 */
const STATUS_ENDINGS = PET_FIELDS[LAST]?.kind === 'status'
  ? PET_STATUSES.map((status) => Buffer.from(`${KEY_TEXTS[LAST] as string}"${status}"}`, 'latin1'))
  : undefined;

/** The fewest bytes of a pet's text: every required field at its shortest, `{"id":1,"name":"a",…}`. */
export const MIN_PET_BYTES = PET_FIELDS.reduce(
  (bytes, field, f) => (field.optional ? bytes : bytes + (KEYS[f] as Buffer).length + SHORTEST_VALUE[field.kind]),
  1,
);

/** The general reader's check of each kind of value: the same rules as a create, and the id a store gives. */
const CHECKS: Readonly<Record<Kind, (value: JsonValue | undefined, name: string) => FieldValue>> = {
  id: (value, name) => {
    if (typeof value !== 'bigint' || value < 1n || value > BigInt(Number.MAX_SAFE_INTEGER)) {
      throw new ValidationError(`field "${name}" must be a positive integer`);
    }
    return Number(value);
  },
  text: validateName,
  int64: validateCategoryId,
  status: (value, name) => validateStatus(value, `field "${name}"`),
};

/**
 * The pet's JSON text: PET_FIELDS in order, spelled out, as a loop over the table took twice as long
 * a pet (bench/results.md, "Issue 42"); test/pet-codec.test.ts holds it to the table.
 */
export function petJson(pet: Pet): string {
  const status = pet.status === undefined ? '' : `,"status":"${pet.status}"`;
  // A bigint has no JSON form of its own: its exact decimal digits are written.
  return `{"id":${pet.id},"name":${JSON.stringify(pet.name)},"categoryId":${pet.categoryId}${status}}`;
}

export function petsJson(pets: readonly Pet[]): string {
  // Joined, not concatenated: `+=` builds a rope that the socket write must flatten again.
  const parts = new Array<string>(pets.length);
  for (let i = 0; i < pets.length; i++) parts[i] = petJson(pets[i] as Pet);
  return `[${parts.join(',')}]`;
}

/**
 * The fast reader: true, with `out` filled in, when the bytes from `start` are a pet's fields exactly as
 * petJson writes them, ending before `end`; the caller checks what stands at `out.fieldsEnd` (the `}`).
 * False for anything else, a name with escapes among it, which the general reader then takes.
 * `trusted`: a checksum has already vouched for the bytes, so the field names are stepped over, not
 * compared, and values are only delimited (a name's escapes included), not checked again.
 */
export function readPet(buf: Buffer, start: number, end: number, out: PetBytes, trusted: boolean): boolean {
  let pos = start;
  let id = 0;
  let status: PetStatus | undefined;
  for (let f = 0; f < KINDS.length; f++) {
    const key = KEYS[f] as Buffer;
    if (OPTIONAL[f] === true) {
      if (!startsWith(buf, pos, key)) continue;
      pos += key.length;
    } else if (trusted && f > 0) {
      pos += key.length;
    } else {
      if (!startsWith(buf, pos, key)) return false;
      pos += key.length;
    }
    const kind = KINDS[f];
    if (kind === ID) {
      const digitsStart = pos;
      for (let c = buf[pos] as number; isDigit(c) && pos - digitsStart < MAX_ID_DIGITS; c = buf[++pos] as number) {
        id = id * 10 + (c - ZERO); // the digit's value first: id * 10 + c can pass 2^53 where the id does not
      }
      if (pos === digitsStart || buf[digitsStart] === ZERO || id > Number.MAX_SAFE_INTEGER) return false;
    } else if (kind === TEXT) {
      pos = trusted ? textEnd(buf, pos) : checkedTextEnd(buf, pos, end);
      if (pos < 0) return false;
    } else if (kind === INT64) {
      pos = trusted ? numberEnd(buf, pos) : checkedInt64End(buf, pos, end);
      if (pos < 0) return false;
    } else {
      status = statusAt(buf, pos);
      if (status === undefined) return false;
      pos += status.length + 2;
    }
  }
  if (pos >= end) return false;
  out.id = id;
  out.status = status;
  out.fieldsEnd = pos;
  return true;
}

/**
 * The id and status of `buf[start..end)`, a text the writer wrote (a database built it from checked
 * columns): the id after the first field's name, the status from the text's end, so that a page of a
 * million pets is not read through. False when the bytes do not begin as a pet's text.
 */
export function readWrittenPet(buf: Buffer, start: number, end: number, out: PetBytes): boolean {
  if (STATUS_ENDINGS === undefined) return readPet(buf, start, end, out, true);
  const key = KEYS[0] as Buffer;
  if (!startsWith(buf, start, key)) return false;
  let pos = start + key.length;
  let id = 0;
  for (let c = buf[pos] as number; isDigit(c); c = buf[++pos] as number) id = id * 10 + (c - ZERO);
  out.id = id;
  out.status = undefined;
  out.fieldsEnd = end - 1;
  for (let i = 0; i < STATUS_ENDINGS.length; i++) {
    const ending = STATUS_ENDINGS[i] as Buffer;
    if (endsWith(buf, end, ending)) {
      out.status = PET_STATUSES[i];
      out.fieldsEnd = end - ending.length;
    }
  }
  return pos > start + key.length;
}

/**
 * The general reader: a pet from any parsed JSON value, checked as a create is checked, plus an id a
 * store gives; a ValidationError says what is wrong. `extra` names one more member a line of an
 * older format may carry (its idempotency record), which is left to the caller.
 */
export function storedPet(value: JsonValue, extra?: string): Pet {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new ValidationError('not a JSON object');
  }
  for (const key of Object.keys(value)) {
    if (!NAMES.includes(key) && key !== extra) throw new ValidationError(`unknown field "${key}"`);
  }
  const pet: Record<string, FieldValue> = {};
  for (const field of PET_FIELDS) {
    const member = value[field.name];
    if (member === undefined && field.optional) continue;
    pet[field.name] = CHECKS[field.kind](member, field.name);
  }
  return pet as unknown as Pet;
}

/** Whether `text` is exactly the text petJson writes for `pet`, so that it can be served as it is. */
export function isPetText(pet: Pet, text: string): boolean {
  return petJson(pet) === text;
}

/**
 * The Pet of a text petJson wrote, not checked again: a plain object, the int64 exact (our own
 * parser, not JSON.parse, which would round it).
 */
export function petFromJson(text: string): Pet {
  const fields = parseJson(text) as JsonObject;
  const pet: Record<string, FieldValue> = {};
  for (let f = 0; f < NAMES.length; f++) {
    const name = NAMES[f] as string;
    const value = fields[name] as FieldValue;
    if (value !== undefined) pet[name] = KINDS[f] === ID ? Number(value) : value;
  }
  return pet as unknown as Pet;
}

/** Just after a JSON string at `pos` whose bytes are vouched for (its escapes stepped over), or -1. */
function textEnd(buf: Buffer, pos: number): number {
  if (buf[pos] !== QUOTE) return -1;
  for (let c = buf[++pos]; c !== QUOTE; c = buf[++pos]) {
    if (c === BACKSLASH) pos++;
    else if (c === undefined) return -1;
  }
  return pos + 1;
}

/** Just after a number at `pos` whose bytes are vouched for: up to the comma or brace after it, or -1. */
function numberEnd(buf: Buffer, pos: number): number {
  for (let c = buf[pos]; c !== COMMA && c !== CLOSE; c = buf[++pos]) if (c === undefined) return -1;
  return pos;
}

/**
 * Just after a string at `pos` with no escape nor control byte, of 1 to NAME_MAX_LENGTH characters,
 * closed before `end`; -1 for any other, which the general reader then judges.
 */
function checkedTextEnd(buf: Buffer, pos: number, end: number): number {
  if (buf[pos++] !== QUOTE) return -1;
  let length = 0; // in UTF-16 units, counted from the (already validated) UTF-8 bytes
  for (;; pos++) {
    if (pos >= end) return -1;
    const c = buf[pos] as number;
    if (c === QUOTE) break;
    if (c === BACKSLASH || c < 0x20) return -1;
    if ((c & 0xc0) !== 0x80) length++; // not a continuation byte: a character begins
    if (c >= 0xf0) length++; // four bytes: a surrogate pair in UTF-16
  }
  return length === 0 || length > NAME_MAX_LENGTH ? -1 : pos + 1;
}

/** Just after a plain decimal int64 at `pos` (no leading zero, no `-0`), or -1. */
function checkedInt64End(buf: Buffer, pos: number, end: number): number {
  const negative = buf[pos] === MINUS;
  const numberStart = pos;
  if (negative) pos++;
  const digitsStart = pos;
  while (pos < end && isDigit(buf[pos] as number)) pos++;
  const digits = pos - digitsStart;
  if (digits === 0 || digits > MAX_INT64_DIGITS || (digits > 1 && buf[digitsStart] === ZERO)) return -1;
  if (negative && digits === 1 && buf[digitsStart] === ZERO) return -1;
  if (digits > SURE_INT64_DIGITS) {
    const value = BigInt(buf.toString('latin1', numberStart, pos));
    if (value < INT64_MIN || value > INT64_MAX) return -1;
  }
  return pos;
}

/**
 * The status whose quoted text is at `pos`, or undefined. Compared as bytes, not decoded: a million
 * lines would make a million short strings.
 */
function statusAt(buf: Buffer, pos: number): PetStatus | undefined {
  if (buf[pos] !== QUOTE) return undefined;
  for (let i = 0; i < STATUS_BYTES.length; i++) {
    const text = STATUS_BYTES[i] as Buffer;
    if (startsWith(buf, pos + 1, text) && buf[pos + 1 + text.length] === QUOTE) return PET_STATUSES[i];
  }
  return undefined;
}

function startsWith(buf: Buffer, pos: number, token: Buffer): boolean {
  for (let i = 0; i < token.length; i++) if (buf[pos + i] !== token[i]) return false;
  return true;
}

/** Whether `token` ends just before `end`, compared from its last byte, where statuses differ. */
function endsWith(buf: Buffer, end: number, token: Buffer): boolean {
  for (let i = 1; i <= token.length; i++) if (buf[end - i] !== token[token.length - i]) return false;
  return true;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}
