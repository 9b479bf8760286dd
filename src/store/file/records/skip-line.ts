import { crc32, readHex8, writeHex8 } from '../../../lib/crc32.js';

/**
 * A journal line of format 4 saying that ids were handed out without a pet's line following them:
 *
 *     {"skipped":[6,9],"crc":"5d0c1e7a"}
 *
 * In a journal of format 4 every pet's id is one above the id before it (the previous line's, or the
 * `lastId` of the snapshot that names the journal), so that a line removed from the middle is missed
 * by its id; a gap the store itself made (creates refused by a failing disk, ids reserved before an
 * unclean stop, a torn append's margin) is written down by this line before the next pet's. Its
 * checksum is the CRC-32 of every byte before `"crc":"`, as the snapshot's end line has it.
 */
const SKIP = /^\{"skipped":\[([1-9][0-9]{0,15}),([1-9][0-9]{0,15})\],"crc":"[0-9a-f]{8}"\}$/;
const CRC_MEMBER = '"crc":"';

/** The skip line for ids `from` to `to`, with its line break. */
export function buildSkipLine(from: number, to: number): Buffer {
  const line = Buffer.from(`{"skipped":[${from},${to}],${CRC_MEMBER}00000000"}\n`);
  const crcAt = line.length - 11;
  writeHex8(crc32(line, 0, crcAt - CRC_MEMBER.length), line, crcAt);
  return line;
}

/** The ids a skip line at `bytes[pos..end)` (no line break) names, or undefined when it is not an intact one. */
export function readSkipLine(bytes: Buffer, pos: number, end: number): { from: number; to: number } | undefined {
  if (end - pos > 64) return undefined;
  const match = SKIP.exec(bytes.toString('latin1', pos, end));
  if (match === null) return undefined;
  const crcAt = end - 10;
  if (crc32(bytes, pos, crcAt - CRC_MEMBER.length) !== readHex8(bytes, crcAt)) return undefined;
  const from = Number(match[1]);
  const to = Number(match[2]);
  return from <= to && to <= Number.MAX_SAFE_INTEGER ? { from, to } : undefined;
}
