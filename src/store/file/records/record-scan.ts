import { parseJson, JsonSyntaxError } from '../../../lib/json.js';
import type { PetStatus } from '../../../pet/contract.js';
import { isPetText, readPet, storedPet, type PetBytes } from '../../../pet/codec.js';
import { ValidationError } from '../../../pet/validate.js';
import type { Damage } from '../damage.js';
import { checksumMatches, objectEndAt, readLineTail, readRecord, tailAtEnd, type LineTail } from './record-line.js';
import { readSkipLine } from './skip-line.js';

/** A record line (record-line.ts) found intact; positions in the scanned buffer. */
export interface ScannedRecord {
  id: number;
  status: PetStatus | undefined;
  lineStart: number;
  textStart: number;
  textEnd: number;
  /** Just after the line's closing `]`. */
  end: number;
  /** Whether the line carries an idempotency record (read back from the line when it is needed). */
  keyed: boolean;
}

/** Where a scan is and what it has found: shared by the files of one directory, whose ids ascend across them. */
export interface ScanState {
  file: string;
  bytes: Buffer;
  /** Check every line's checksum; false only when the whole file's checksum already vouches for every byte. */
  verify: boolean;
  /** The highest id taken so far (every id must be above it). */
  lastId: number;
  /**
   * In a journal of format 4: the id the next line must follow (its pet's id one above it, or a skip
   * line's first id), NaN while that is not known (a snapshot whose end is damaged); undefined where
   * ids may jump (a snapshot, older journals).
   */
  follow?: number | undefined;
  damage: Damage[];
  /** Where intact lines found out of order go (a copy of each), when the caller keeps them. */
  displaced?: DisplacedLine[] | undefined;
}

/** An intact pet's line found after a higher id: its damage names the place; `line` is its bytes alone. */
export interface DisplacedLine extends ScannedRecord {
  line: Buffer;
  damage: Damage;
}

const lineTail: LineTail = { recordStart: -1, recordEnd: -1, crcAt: 0, end: 0 };
const LINE_BREAK = 0x0a;
const COMMA = 0x2c;
const RECORD_START = Buffer.from('[{"id":', 'latin1');

/**
 * Reads the record lines of `bytes[start..end)`, line `firstLine` onwards, and returns the number of
 * the line after them, passing each intact one to
 * `onRecord` (the ScannedRecord is reused: copy what is kept). In a snapshot (`commas`) a line may end
 * with `,` before its line break. Nothing damaged is passed on or skipped silently: each
 * stretch of bytes that is not an intact record goes to `state.damage`, and the scan picks up at the
 * next line, or at the next record start inside the stretch (a line break that became another byte).
 */
export function scanRecords(
  state: ScanState,
  start: number,
  end: number,
  firstLine: number,
  commas: boolean,
  onRecord: (r: ScannedRecord) => void,
): number {
  const { bytes } = state;
  const found = newRecord();
  const pet: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  const open: Damage[] = []; // damage whose next intact pet is not known yet
  let line = firstLine;
  let pos = start;
  while (pos < end) {
    if (state.follow !== undefined && bytes[pos] === 0x7b) {
      const after = skipLineAt(state, line, pos, end);
      if (after !== -1) {
        pos = after;
        line++;
        continue;
      }
    }
    const problem = readRecordAt(bytes, pos, end, state.verify, found, pet);
    let resume: number;
    if (problem === undefined && found.id > state.lastId) {
      take(state, line, pos, found, open);
      onRecord(found);
      // A snapshot's lines end in `,` but for the last; which one is last the whole file's checksum
      // vouches for, so a missing or extra comma is damage only to that checksum, not to a pet.
      let next = found.end;
      if (commas && bytes[next] === COMMA) next++;
      if (bytes[next] === LINE_BREAK || next >= end) {
        pos = next + 1;
        line++;
        continue;
      }
      resume = brokenLineEnd(state, line, found, next, end);
      line += breaksIn(bytes, found.end, resume);
    } else {
      resume =
        problem === undefined
          ? displace(state, line, pos, end, found, open)
          : damaged(state, line, pos, end, commas, problem, open);
      line += breaksIn(bytes, pos, resume);
    }
    pos = resume;
  }
  return line;
}

const newRecord = (): ScannedRecord => ({
  id: 0,
  status: undefined,
  lineStart: 0,
  textStart: 0,
  textEnd: 0,
  end: 0,
  keyed: false,
});

/** In a journal of format 4, the skip line at `pos` taken, and where the next line starts; -1: none there. */
function skipLineAt(state: ScanState, line: number, pos: number, end: number): number {
  const lineBreak = state.bytes.indexOf(LINE_BREAK, pos);
  const lineEnd = lineBreak === -1 || lineBreak > end ? end : lineBreak;
  const skip = readSkipLine(state.bytes, pos, lineEnd);
  if (skip === undefined || !(skip.from > state.lastId)) return -1;
  missingBefore(state, line, pos, skip.from);
  state.lastId = skip.to;
  state.follow = skip.to;
  return lineEnd + 1;
}

/** An intact pet in id order: it follows the line before and closes the damage still open before it. */
function take(state: ScanState, line: number, pos: number, found: ScannedRecord, open: Damage[]): void {
  if (state.follow !== undefined) {
    missingBefore(state, line, pos, found.id);
    state.follow = found.id;
  }
  if (open.length > 0) {
    for (const d of open) (d.between as [number, number])[1] = found.id;
    open.length = 0;
  }
  state.lastId = found.id;
}

/**
 * The line break after an intact pet is damaged or gone: what stands there up to the next line, or up
 * to the next pet's line if it follows at once, is damage between two intact pets. Returns where to resume.
 */
function brokenLineEnd(state: ScanState, line: number, found: ScannedRecord, next: number, end: number): number {
  const resume = resumeAt(state.bytes, found.end, end);
  const reason =
    resume === next
      ? `the line break after pet ${found.id} is missing`
      : `the end of the line after pet ${found.id} is damaged`;
  damageAt(state, line, found.end, resume, reason, found.id).between = undefined;
  return resume;
}

/**
 * An intact line out of order (lines swapped, or one repeated): damage to the file, not to the pet,
 * whose line is kept aside for whoever repairs (displaced.ts) and set back in id order.
 */
function displace(
  state: ScanState,
  line: number,
  pos: number,
  end: number,
  found: ScannedRecord,
  open: Damage[],
): number {
  const resume = resumeAt(state.bytes, pos + 1, end);
  const reason = `id ${found.id} is not above the previous id ${state.lastId}`;
  const damage = damageAt(state, line, pos, resume, reason, undefined);
  damage.kind = 'out-of-order';
  open.push(damage);
  state.displaced?.push({ ...found, line: Buffer.from(state.bytes.subarray(found.lineStart, found.end)), damage });
  return resume;
}

/** Bytes at `pos` that are not an intact record: damage up to where reading resumes, which it returns. */
function damaged(
  state: ScanState,
  line: number,
  pos: number,
  end: number,
  commas: boolean,
  problem: string,
  open: Damage[],
): number {
  const { bytes } = state;
  // Which ids damaged bytes held is not known: the next intact line is not held to follow them.
  if (state.follow !== undefined) state.follow = Number.NaN;
  const resume = resumeAt(bytes, pos + 1, end);
  const reason = state.verify ? (checksumVerdict(bytes, pos, end, commas) ?? problem) : problem;
  open.push(damageAt(state, line, pos, resume, reason, idNamedAt(bytes, pos, resume)));
  return resume;
}

/**
 * In a journal of format 4, a line whose id is more than one above the id it must follow: the lines
 * between are missing (no skip line says they were never written). Damage without bytes.
 */
function missingBefore(state: ScanState, line: number, pos: number, id: number): void {
  const follow = state.follow as number;
  if (!(id > follow + 1)) return;
  const which =
    id === follow + 2
      ? `the line of pet ${follow + 1} is missing`
      : `the lines of pets ${follow + 1}–${id - 1} are missing`;
  state.damage.push({
    file: state.file,
    line,
    offset: pos,
    bytes: Buffer.alloc(0),
    reason: `${which}: pet ${id} follows pet ${follow}`,
    id: undefined,
    between: [follow, id],
    kind: 'missing',
  });
}

/** The intact record line at `pos`, checksum checked, or undefined when there is none. */
export function intactRecordAt(bytes: Buffer, pos: number, end: number): ScannedRecord | undefined {
  const found = newRecord();
  const problem = readRecordAt(bytes, pos, end, true, found, { id: 0, status: undefined, fieldsEnd: 0 });
  return problem === undefined ? found : undefined;
}

/**
 * Reads the record line at `pos` into `out`: undefined when it is intact, else what is wrong. Lines in
 * the store's own form go through the codec's fast reader (stepping over what the file's checksum
 * vouches for when `verify` is off); any other through the general reader, which must give back the
 * very same text, and whose line is then read with every check.
 */
function readRecordAt(
  bytes: Buffer,
  pos: number,
  end: number,
  verify: boolean,
  out: ScannedRecord,
  pet: PetBytes,
): string | undefined {
  if (bytes[pos] !== 0x5b) return 'not a pet record';
  let textEnd: number;
  let careful = verify;
  if (readPet(bytes, pos + 1, end, pet, !verify) && bytes[pet.fieldsEnd] === 0x7d) {
    textEnd = pet.fieldsEnd + 1;
    out.id = pet.id;
    out.status = pet.status;
  } else {
    const general = readGeneral(bytes, pos + 1, end);
    if (typeof general === 'string') return general;
    textEnd = general.end;
    out.id = general.id;
    out.status = general.status;
    careful = true;
  }
  const tail = readLineTail(bytes, textEnd, end, lineTail);
  if (tail === undefined) return 'not a pet record';
  if (verify && !checksumMatches(bytes, pos, tail)) return 'checksum mismatch';
  out.keyed = tail.recordStart >= 0;
  if (careful && out.keyed && readRecord(bytes, tail.recordStart, tail.recordEnd) === undefined) {
    return "the idempotency record is not in the store's form";
  }
  out.lineStart = pos;
  out.textStart = pos + 1;
  out.textEnd = textEnd;
  out.end = tail.end;
  return undefined;
}

/** A pet text the fast reader does not take (a name with escapes), read by the strict general parser. */
function readGeneral(
  bytes: Buffer,
  start: number,
  end: number,
): { id: number; status: PetStatus | undefined; end: number } | string {
  const close = bytes[start] === 0x7b ? objectEndAt(bytes, start, end) : -1;
  if (close < 0) return 'not a pet record';
  const text = bytes.toString('utf8', start, close);
  try {
    const pet = storedPet(parseJson(text));
    if (!isPetText(pet, text)) return "the pet's text is not in the store's form";
    return { id: pet.id, status: pet.status, end: close };
  } catch (error) {
    if (error instanceof JsonSyntaxError || error instanceof ValidationError)
      return `not a valid pet: ${error.message}`;
    throw error;
  }
}

/**
 * Why the line at `pos`, which could not be read as a record, is damaged, said as plainly as it can
 * be: when it still ends in a checksum and that does not match its bytes, a flip in the name's
 * member name is a checksum mismatch, not an unknown field.
 */
function checksumVerdict(bytes: Buffer, pos: number, end: number, commas: boolean): string | undefined {
  const lineBreak = bytes.indexOf(LINE_BREAK, pos);
  let contentEnd = lineBreak === -1 || lineBreak > end ? end : lineBreak;
  if (commas && bytes[contentEnd - 1] === COMMA) contentEnd--;
  const tail = tailAtEnd(bytes, pos, contentEnd);
  return tail === undefined || checksumMatches(bytes, pos, tail) ? undefined : 'checksum mismatch';
}

/** Where to read again after damage at `from`: the next line, or a record that starts before it. */
function resumeAt(bytes: Buffer, from: number, end: number): number {
  const lineBreak = bytes.indexOf(LINE_BREAK, from);
  const nextLine = lineBreak === -1 || lineBreak >= end ? end : lineBreak + 1;
  const record = bytes.indexOf(RECORD_START, from);
  return record !== -1 && record < nextLine ? record : nextLine;
}

function breaksIn(bytes: Buffer, from: number, to: number): number {
  let count = 0;
  for (let i = bytes.indexOf(LINE_BREAK, from); i !== -1 && i < to; i = bytes.indexOf(LINE_BREAK, i + 1)) count++;
  return count;
}

/** The id a damaged line still names at its start (`[{"id":123,`), if it does. */
function idNamedAt(bytes: Buffer, pos: number, end: number): number | undefined {
  if (bytes.compare(RECORD_START, 0, RECORD_START.length, pos, Math.min(end, pos + RECORD_START.length)) !== 0)
    return undefined;
  const digits = /^[1-9][0-9]{0,15}(?=,)/.exec(
    bytes.toString('latin1', pos + RECORD_START.length, Math.min(end, pos + RECORD_START.length + 17)),
  );
  const id = digits === null ? Number.NaN : Number(digits[0]);
  return id <= Number.MAX_SAFE_INTEGER ? id : undefined;
}

function damageAt(
  state: ScanState,
  line: number,
  from: number,
  to: number,
  reason: string,
  id: number | undefined,
): Damage {
  const bytes = Buffer.from(state.bytes.subarray(from, state.bytes[to - 1] === LINE_BREAK ? to - 1 : to));
  const damage: Damage = {
    file: state.file,
    line,
    offset: from,
    bytes,
    reason,
    id,
    between: [state.lastId, Number.POSITIVE_INFINITY],
  };
  state.damage.push(damage);
  return damage;
}
