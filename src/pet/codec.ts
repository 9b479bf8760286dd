import { INT64_MAX, INT64_MIN, NAME_MAX_LENGTH, PET_FIELDS, PET_STATUSES } from './contract.js';
import type { Pet, PetStatus } from './contract.js';
import { parseJson, type JsonObject, type JsonValue } from '../lib/json.js';
import { validateCategoryId, validateName, validateStatus, ValidationError } from './validate.js';

/**
 * A pet's JSON text, the bytes the API answers and the stores keep, after the field table in
 * contract.ts: `{"id":1,"name":"Rex","categoryId":7,"status":"sold"}`, the fields in the table's
 * order, an optional one left out when the pet has none. One writer; one fast reader of the bytes the
 * writer makes, which gives up on anything else; one general reader that parses and checks any JSON
 * and says what is wrong. Field names, kinds and statuses come from the table; the writer and the
 * fast reader spell the fields out in its order, as a loop over it cost twice as much a pet
 * (bench/results.md, "Issue 42"), and test/pet-codec.test.ts holds them to it.
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

/** The text before each field's value: `{"id":`, `,"name":`, … */
const KEY_TEXTS = PET_FIELDS.map((field, i) => `${i === 0 ? '{' : ','}"${field.name}":`);
const KEYS = KEY_TEXTS.map((key) => Buffer.from(key, 'latin1'));
const [ID_KEY, NAME_KEY, CATEGORY_KEY, STATUS_KEY] = KEYS as [Buffer, Buffer, Buffer, Buffer];
const NAMES: readonly string[] = PET_FIELDS.map((field) => field.name);
const STATUS_BYTES = PET_STATUSES.map((status) => Buffer.from(status, 'latin1'));
/** Per first byte: 1 + the index of the one status that begins with it, 0 for none, -1 where two do. */
const STATUS_BY_FIRST_BYTE = byteIndex(STATUS_BYTES.map((status) => status[0] as number));
/** The same per last byte. */
const STATUS_BY_LAST_BYTE = byteIndex(STATUS_BYTES.map((status) => status[status.length - 1] as number));
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
const OPEN = 0x7b;
const BACKSLASH = 0x5c;
const MINUS = 0x2d;
const ZERO = 0x30;
const COMMA = 0x2c;
const CLOSE = 0x7d;

/** Each status's closing bytes, `:"sold"}`: the status is the last field, so a text's end tells it. */
const STATUS_ENDINGS = PET_STATUSES.map((status) => Buffer.from(`:"${status}"}`, 'latin1'));

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
  return trusted ? readVouched(buf, start, end, out) : readChecked(buf, start, end, out);
}

function readChecked(buf: Buffer, start: number, end: number, out: PetBytes): boolean {
  if (!startsWith(buf, start, ID_KEY)) return false;
  let pos = start + ID_KEY.length;
  const digitsStart = pos;
  let id = 0;
  for (let c = buf[pos] as number; isDigit(c) && pos - digitsStart < MAX_ID_DIGITS; c = buf[++pos] as number) {
    id = id * 10 + (c - ZERO); // the digit's value first: id * 10 + c can pass 2^53 where the id does not
  }
  if (pos === digitsStart || buf[digitsStart] === ZERO || id > Number.MAX_SAFE_INTEGER) return false;
  if (!startsWith(buf, pos, NAME_KEY)) return false;
  pos = checkedTextEnd(buf, pos + NAME_KEY.length, end);
  if (pos < 0 || !startsWith(buf, pos, CATEGORY_KEY)) return false;
  pos = checkedInt64End(buf, pos + CATEGORY_KEY.length, end);
  if (pos < 0) return false;
  let status: PetStatus | undefined;
  if (buf[pos] === COMMA && startsWith(buf, pos, STATUS_KEY)) {
    status = statusAt(buf, pos + STATUS_KEY.length);
    if (status === undefined) return false;
    pos += STATUS_KEY.length + status.length + 2;
  }
  if (pos >= end) return false;
  out.id = id;
  out.status = status;
  out.fieldsEnd = pos;
  return true;
}

/** The bytes a checksum vouched for: only where each part ends is looked for. */
function readVouched(buf: Buffer, start: number, end: number, out: PetBytes): boolean {
  if (buf[start] !== OPEN) return false;
  let pos = start + ID_KEY.length;
  const digitsStart = pos;
  let id = 0;
  for (let c = buf[pos] as number; isDigit(c) && pos - digitsStart < MAX_ID_DIGITS; c = buf[++pos] as number) {
    id = id * 10 + (c - ZERO);
  }
  if (pos === digitsStart || buf[digitsStart] === ZERO || id > Number.MAX_SAFE_INTEGER) return false;
  pos += NAME_KEY.length + 1;
  for (let c = buf[pos]; c !== QUOTE; c = buf[++pos]) {
    if (c === BACKSLASH) pos++;
    else if (c === undefined) return false;
  }
  pos += 1 + CATEGORY_KEY.length;
  for (let c = buf[pos]; c !== COMMA && c !== CLOSE; c = buf[++pos]) if (c === undefined) return false;
  let status: PetStatus | undefined;
  if (buf[pos] === COMMA && buf[pos + 2] === STATUS_KEY[2]) {
    status = statusAt(buf, pos + STATUS_KEY.length);
    if (status === undefined) return false;
    pos += STATUS_KEY.length + status.length + 2;
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
  if (!startsWith(buf, start, ID_KEY)) return false;
  let pos = start + ID_KEY.length;
  let id = 0;
  for (let c = buf[pos] as number; isDigit(c); c = buf[++pos] as number) id = id * 10 + (c - ZERO);
  out.id = id;
  out.status = undefined;
  out.fieldsEnd = end - 1;
  // Without a status the text ends in the int64's last digit; a JSON string holds no bare quote, so
  // `:"sold"}` at the end is the status's. Its last letter tells it where no other status shares it.
  if (buf[end - 2] !== QUOTE) return pos > start + ID_KEY.length;
  const code = STATUS_BY_LAST_BYTE[buf[end - 3] as number] ?? 0;
  if (code > 0) {
    if (endsWith(buf, end, STATUS_ENDINGS[code - 1] as Buffer)) out.status = PET_STATUSES[code - 1];
    return pos > start + ID_KEY.length;
  }
  for (let i = 0; i < STATUS_ENDINGS.length; i++) {
    const ending = STATUS_ENDINGS[i] as Buffer;
    if (endsWith(buf, end, ending)) {
      out.status = PET_STATUSES[i];
      break;
    }
  }
  return pos > start + ID_KEY.length;
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
  for (const { name, kind } of PET_FIELDS) {
    const value = fields[name] as FieldValue;
    if (value !== undefined) pet[name] = kind === 'id' ? Number(value) : value;
  }
  return pet as unknown as Pet;
}

/**
 * Just after a string at `pos` with no escape nor control byte, of 1 to NAME_MAX_LENGTH characters,
 * closed before `end`; -1 for any other, which the general reader then judges.
 */
function checkedTextEnd(buf: Buffer, pos: number, end: number): number {
  if (buf[pos++] !== QUOTE) return -1;
  let length = 0; // in UTF-16 units, counted from the (already validated) UTF-8 bytes
  for (; ; pos++) {
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
 * The status whose quoted text is at `pos`, or undefined: looked up by its first letter where no other
 * status shares it, then every letter and the closing quote compared; as bytes, not decoded, as a
 * million lines would make a million short strings.
 */
function statusAt(buf: Buffer, pos: number): PetStatus | undefined {
  if (buf[pos] !== QUOTE) return undefined;
  const code = STATUS_BY_FIRST_BYTE[buf[pos + 1] as number] ?? 0;
  if (code === 0) return undefined;
  const last = code > 0 ? code : STATUS_BYTES.length;
  for (let i = code > 0 ? code - 1 : 0; i < last; i++) {
    const text = STATUS_BYTES[i] as Buffer;
    if (buf[pos + 1 + text.length] === QUOTE && startsWith(buf, pos + 1, text)) return PET_STATUSES[i];
  }
  return undefined;
}

/** Per byte value: 1 + the index of the one entry of `bytes` equal to it, 0 for none, -1 for more than one. */
function byteIndex(bytes: readonly number[]): Int8Array {
  const index = new Int8Array(256);
  for (const [i, byte] of bytes.entries()) index[byte] = index[byte] === 0 ? i + 1 : -1;
  return index;
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
