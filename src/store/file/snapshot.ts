import { crc32, readHex8, writeHex8 } from '../../lib/crc32.js';
import type { PetIndex } from '../pet-index.js';
import { checksumMatches, readLineTail, withoutRecord } from './records/record-line.js';
import type { Damage } from './damage.js';
import { checkFormat, FORMAT_NAME, FORMAT_VERSION, namedFormat } from './records/data-format.js';
import { intactRecordAt, scanRecords, type ScannedRecord, type ScanState } from './records/record-scan.js';

/**
 * `pets.json` of format 4, laid out as format 3 was (data-format.ts): a head naming the first journal it does not
 * cover, one
 * record line (record-line.ts) per pet, and an end giving the number of pets, the highest id ever
 * handed out and the CRC-32 of every byte of the file before that checksum:
 *
 *     {"format":"petstore-pets/3","journal":4,"pets":[
 *     [{"id":1,"name":"Rex",…},"8c0d4a4e"],
 *     [{"id":2,"name":"Tom",…,"status":"sold"},"3a7f0c12"]
 *     ],"count":2,"lastId":2,"crc":"5b2e9d07"}
 *
 * At start the whole file's checksum is computed in one call into zlib; when it matches, every byte is
 * as written and the lines are not checked one by one. Only when it does not are they, to say which.
 */
const HEAD = /^\{"format":"petstore-pets\/[34]","journal":([1-9][0-9]{0,14}),"pets":\[$/;
const END = /^\],"count":(0|[1-9][0-9]{0,15}),"lastId":(0|[1-9][0-9]{0,15}),"crc":"([0-9a-f]{8})"\}$/;
const CRC_MEMBER = '"crc":"';
const CHUNK_BYTES = 64 * 1024;

export interface SnapshotContents {
  /** The first journal generation it does not cover; undefined when its head is damaged. */
  journal: number | undefined;
  /** The highest id it says was ever handed out; undefined when its end is damaged. */
  lastId: number | undefined;
}

/** The end line of a snapshot of format 3 or 4, when its last line is one: where it starts, and what it says. */
function endOf(bytes: Buffer): { start: number; count: number; lastId: number; crcAt: number } | undefined {
  const lineBreakAtEnd = bytes.length > 0 && bytes[bytes.length - 1] === 0x0a;
  if (!lineBreakAtEnd) return undefined;
  const start = bytes.lastIndexOf(0x0a, bytes.length - 2) + 1;
  const end = END.exec(bytes.toString('latin1', start, Math.min(bytes.length - 1, start + 100)));
  // The whole file's checksum covers every byte before its own member (`"crc":"` + 8 digits + `"}`).
  return end === null
    ? undefined
    : { start, count: Number(end[1]), lastId: Number(end[2]), crcAt: start + end[0].length - 10 };
}

/**
 * 3 or 4 when `bytes` is a snapshot laid out as those formats are, judged by its layout rather than by
 * the format its head names, which a flipped bit may have changed: it ends as they do, its first pet's
 * line is an intact line of theirs (no earlier format has either), its first line is their head, or
 * it was cut short inside that head (an empty file too). Which of the two: the one its head names,
 * else 4. A head naming a newer format over a file whose whole checksum matches is what a newer
 * version wrote, and refused as such. Undefined: an earlier format.
 */
export function checksummedFormat(bytes: Buffer, file: string): 3 | 4 | undefined {
  const end = endOf(bytes);
  const firstLine = bytes.indexOf('\n[{"id":');
  const headEnd = bytes.indexOf(0x0a);
  const headCut = headEnd === -1 && bytes.length < 100 && isCutHead(bytes.toString('latin1'));
  const layout =
    end !== undefined ||
    headCut ||
    (headEnd !== -1 && HEAD.test(bytes.toString('latin1', 0, Math.min(headEnd, 100)))) ||
    (firstLine !== -1 && firstLine < 4096 && intactRecordAt(bytes, firstLine + 1, bytes.length) !== undefined);
  if (!layout) return undefined;
  const named = namedFormat(bytes);
  if (
    named !== undefined &&
    named !== '3' &&
    named !== '4' &&
    end !== undefined &&
    crc32(bytes, 0, end.crcAt - CRC_MEMBER.length) === readHex8(bytes, end.crcAt)
  ) {
    checkFormat(`${FORMAT_NAME}/${named}`, file);
  }
  return named === '3' ? 3 : 4;
}

/** Whether `text` is the start of a head of format 3 or 4 (nothing at all, too): a file cut short inside its head. */
function isCutHead(text: string): boolean {
  return ['3', '4'].some((version) => {
    const start = `{"format":"${FORMAT_NAME}/${version}","journal":`;
    if (start.startsWith(text)) return true;
    const rest = text.startsWith(start) ? text.slice(start.length).replace(/^[1-9][0-9]{0,14}/, '') : undefined;
    return rest !== undefined && ',"pets":['.startsWith(rest);
  });
}

/**
 * Reads a snapshot of format 3 or 4 into `onRecord`; damage goes to `state.damage`, never to an exception.
 * Only a first line that is the head is taken for it, and only a last line that is the end: lines
 * between are read as pets whatever became of the line breaks around them, so a damaged head or end
 * takes no pet with it. A damaged end is read as damage that may have held pets after the last one.
 */
export function readSnapshot(state: ScanState, onRecord: (r: ScannedRecord) => void): SnapshotContents {
  const { bytes, file } = state;
  const headEnd = bytes.indexOf(0x0a);
  const head = headEnd === -1 ? null : HEAD.exec(bytes.toString('latin1', 0, Math.min(headEnd, 100)));
  const end = endOf(bytes);
  const intact =
    head !== null && end !== undefined && crc32(bytes, 0, end.crcAt - CRC_MEMBER.length) === readHex8(bytes, end.crcAt);
  state.verify = !intact;
  // Without a head, the pets begin at the first pet's line, wherever the head's line break went.
  const first = bytes.indexOf('[{"id":');
  const petsStart = head !== null ? headEnd + 1 : first === -1 ? bytes.length : first;
  const petsEnd = end === undefined ? bytes.length : Math.max(petsStart, end.start);
  const found = state.damage.length;
  const problem = (line: number, offset: number, reason: string, to: number): void => {
    state.damage.push({
      file,
      line,
      offset,
      bytes: Buffer.from(bytes.subarray(offset, to)),
      reason,
      id: undefined,
      between: undefined,
    });
  };
  if (head === null) problem(1, 0, 'the head (format and journal generation) is damaged', petsStart);
  let count = 0;
  let afterLastPet = petsStart;
  const endLine = scanRecords(state, petsStart, petsEnd, head === null ? 1 : 2, true, (r) => {
    count++;
    afterLastPet = r.end;
    onRecord(r);
  });
  if (end === undefined) {
    // Whatever stands after the last pet was read above as damage that may have held more pets; a
    // file that stops right after a pet's line has lost its end all the same.
    if (!state.damage.slice(found).some((d) => d.offset >= afterLastPet)) {
      problem(
        endLine,
        bytes.length,
        'the end (pet count, last id and checksum) is missing: the file was cut short',
        bytes.length,
      );
      (state.damage.at(-1) as { between: [number, number] | undefined }).between = [
        state.lastId,
        Number.POSITIVE_INFINITY,
      ];
    }
  } else if (end.count !== count && state.damage.length === found) {
    problem(endLine, end.start, `it holds ${count} pets but says it holds ${end.count}`, bytes.length);
  } else if (!intact && state.damage.length === found) {
    problem(
      endLine,
      end.start,
      "the file's checksum does not match its records, though every pet's line matches its own: a line break, the " +
        'pet count, the last id or the checksum ' +
        'itself is damaged, or a line was changed and checksummed anew, and which line cannot be known',
      bytes.length,
    );
    (state.damage.at(-1) as Damage).kind = 'whole-file';
  }
  return { journal: head === null ? undefined : Number(head[1]), lastId: end?.lastId };
}

/** A pet's line in memory no longer matches its checksum: RAM, not the disk, changed it. Never written on. */
export class MemoryDamageError extends Error {
  constructor(id: number) {
    super(
      `pet ${id}'s line in memory does not match its checksum; the snapshot was not written and the journals are kept`,
    );
    this.name = 'MemoryDamageError';
  }
}

/**
 * pets.json of the first `count` pets of `index`, covering the journals before `journal`, as Buffers
 * of about 64 KiB: each pet's line is checked against its own checksum and copied as it is (a record
 * past its window is dropped and the line checksummed anew), so a copy never vouches for bytes that
 * changed since they were checked. `keepsRecord` tells which records are within their window; `lastId`
 * is the highest id handed out so far, kept so that no id is ever handed out twice.
 */
export function* snapshotChunks(
  index: PetIndex,
  count: number,
  journal: number,
  lastId: number,
  keepsRecord: (id: number) => boolean,
): Generator<Uint8Array> {
  let checksum = 0;
  let out = Buffer.from(`{"format":"${FORMAT_NAME}/${FORMAT_VERSION}","journal":${journal},"pets":[\n`);
  let used = out.length;
  let written = 0;
  let highest = lastId;
  for (const { id, bytes, textStart, textEnd } of index.lines(count)) {
    const tail = readLineTail(bytes, textEnd, bytes.length);
    if (tail === undefined || !checksumMatches(bytes, textStart - 1, tail)) throw new MemoryDamageError(id);
    const line =
      tail.recordStart >= 0 && !keepsRecord(id)
        ? withoutRecord(bytes, textStart, textEnd)
        : bytes.subarray(textStart - 1, tail.end);
    const room = line.length + 2;
    if (used + room > out.length) {
      checksum = crc32(out, 0, used, checksum);
      yield out.subarray(0, used);
      out = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, room));
      used = 0;
    }
    used += line.copy(out, used);
    if (++written < count) out[used++] = 0x2c;
    out[used++] = 0x0a;
    highest = Math.max(highest, id);
  }
  const end = Buffer.from(`],"count":${count},"lastId":${highest},${CRC_MEMBER}00000000"}\n`);
  checksum = crc32(out, 0, used, checksum);
  // The checksum covers the end too, up to its own member: `"crc":"` + 8 digits + `"}` + line break follow.
  checksum = crc32(end, 0, end.length - CRC_MEMBER.length - 11, checksum);
  writeHex8(checksum, end, end.length - 11);
  yield out.subarray(0, used);
  yield end;
}
