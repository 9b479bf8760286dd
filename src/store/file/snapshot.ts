import { crc32, readHex8, writeHex8 } from '../../lib/crc32.js';
import type { PetIndex } from './pet-index.js';
import { checksumMatches, readLineTail, withoutRecord } from './record-line.js';
import { scanRecords, type ScannedRecord, type ScanState } from './record-scan.js';

/**
 * `pets.json` of format 3 (data-format.ts): a head naming the first journal it does not cover, one
 * record line (record-line.ts) per pet, and an end giving the number of pets, the highest id ever
 * handed out and the CRC-32 of every byte of the file before that checksum:
 *
 *     {"format":"petstore-pets/3","journal":4,"pets":[
 *     [{"id":1,"name":"Rex","categoryId":7},"8c0d4a4e"],
 *     [{"id":2,"name":"Tom","categoryId":8,"status":"sold"},"3a7f0c12"]
 *     ],"count":2,"lastId":2,"crc":"5b2e9d07"}
 *
 * At start the whole file's checksum is computed in one call into zlib; when it matches, every byte is
 * as written and the lines are not checked one by one. Only when it does not are they, to say which.
 */
export const SNAPSHOT_V3 = 'petstore-pets/3';
const HEAD = /^\{"format":"petstore-pets\/3","journal":([1-9][0-9]{0,14}),"pets":\[$/;
const END = /^\],"count":(0|[1-9][0-9]{0,15}),"lastId":(0|[1-9][0-9]{0,15}),"crc":"([0-9a-f]{8})"\}$/;
const CRC_MEMBER = '"crc":"';
const CHUNK_BYTES = 64 * 1024;

export interface SnapshotContents {
  /** The first journal generation it does not cover; undefined when its head is damaged. */
  journal: number | undefined;
  /** The highest id it says was ever handed out (0 when its end is damaged). */
  lastId: number;
}

/** Reads a format-3 snapshot into `onRecord`; damage goes to `state.damage`, never to an exception. */
export function readSnapshot(state: ScanState, onRecord: (r: ScannedRecord) => void): SnapshotContents {
  const { bytes, file } = state;
  const headEnd = bytes.indexOf(0x0a);
  const head = headEnd === -1 ? null : HEAD.exec(bytes.toString('latin1', 0, Math.min(headEnd, 100)));
  const lineBreakAtEnd = bytes.length > 0 && bytes[bytes.length - 1] === 0x0a;
  const endStart = bytes.lastIndexOf(0x0a, bytes.length - (lineBreakAtEnd ? 2 : 1)) + 1;
  const end = headEnd === -1 || endStart <= headEnd ? null
    : END.exec(bytes.toString('latin1', endStart, Math.min(bytes.length - (lineBreakAtEnd ? 1 : 0), endStart + 100)));
  // The whole file's checksum covers every byte before its own member (`"crc":"` + 8 digits + `"}`).
  const covered = end === null ? -1 : endStart + end[0].length - CRC_MEMBER.length - 10;
  const intact = head !== null && end !== null && lineBreakAtEnd && crc32(bytes, 0, covered) === readHex8(bytes, covered + CRC_MEMBER.length);
  state.verify = !intact;
  const found = state.damage.length;
  let count = 0;
  const endLine = scanRecords(state, headEnd === -1 ? bytes.length : headEnd + 1, headEnd === -1 ? bytes.length : Math.max(headEnd + 1, endStart), 2, true, (r) => {
    count++;
    onRecord(r);
  });
  const problem = (line: number, offset: number, reason: string, to = bytes.length): void => {
    state.damage.push({ file, line, offset, bytes: Buffer.from(bytes.subarray(offset, to)), reason, id: undefined, between: undefined });
  };
  if (head === null) problem(1, 0, 'the head (format and journal generation) is damaged', headEnd === -1 ? bytes.length : headEnd);
  if (end === null || !lineBreakAtEnd) {
    problem(endLine, endStart, 'the end (pet count, last id and checksum) is damaged');
  } else if (Number(end[1]) !== count && state.damage.length === found) {
    problem(endLine, endStart, `it holds ${count} pets but says it holds ${end[1]}`);
  } else if (!intact && state.damage.length === found) {
    problem(endLine, endStart, 'the file\'s checksum does not match, though every pet\'s line does: a line break, the pet count or the checksum itself is damaged');
  }
  return { journal: head === null ? undefined : Number(head[1]), lastId: end === null ? 0 : Number(end[2]) };
}

/** A pet's line in memory no longer matches its checksum: RAM, not the disk, changed it. Never written on. */
export class MemoryDamageError extends Error {
  constructor(id: number) {
    super(`pet ${id}'s line in memory does not match its checksum; the snapshot was not written and the journals are kept`);
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
  index: PetIndex, count: number, journal: number, lastId: number, keepsRecord: (id: number) => boolean,
): Generator<Uint8Array> {
  let checksum = 0;
  let out = Buffer.from(`{"format":"${SNAPSHOT_V3}","journal":${journal},"pets":[\n`);
  let used = out.length;
  let written = 0;
  let highest = lastId;
  for (const { id, bytes, textStart, textEnd } of index.lines(count)) {
    const tail = readLineTail(bytes, textEnd, bytes.length);
    if (tail === undefined || !checksumMatches(bytes, textStart - 1, tail)) throw new MemoryDamageError(id);
    const line = tail.recordStart >= 0 && !keepsRecord(id) ? withoutRecord(bytes, textStart, textEnd) : bytes.subarray(textStart - 1, tail.end);
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
