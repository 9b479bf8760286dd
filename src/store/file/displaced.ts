import type { Damage } from './damage.js';
import { PetIndex } from '../pet-index.js';
import { readLineTail } from './records/record-line.js';
import type { DisplacedLine } from './records/record-scan.js';

/**
 * The pets of `index` with the intact lines found out of order (lines swapped or repeated) set back
 * in id order, for a repair: every pet whose own checksum holds is kept, and only damaged bytes are
 * set aside. A line that repeats a pet already there, byte for byte, is dropped as the copy it is;
 * one that differs stays damage. Their damage is marked `kept`, and so are lines reported missing
 * from a journal that turn out to be among them. The index is new; `keyed` gains the ids it holds.
 */
export function setBack(
  index: PetIndex,
  displaced: readonly DisplacedLine[],
  damage: readonly Damage[],
  keyed: number[],
): PetIndex {
  if (displaced.length === 0) return index;
  const pending = [...displaced].sort((a, b) => a.id - b.id);
  const merged = new PetIndex(index.size + pending.length);
  let next = 0;
  const putPending = (below: number): void => {
    for (let d = pending[next]; d !== undefined && d.id < below; d = pending[++next]) {
      if (d.id > merged.lastId) {
        merged.appendLine(d.id, d.status, d.line, 0, d.line.length, d.textStart - d.lineStart, d.textEnd - d.lineStart);
        if (d.keyed) keyed.push(d.id);
        d.damage.kept = true;
      }
    }
  };
  for (const { id, bytes, textStart, textEnd } of index.lines(index.size)) {
    putPending(id);
    const end = readLineTail(bytes, textEnd, bytes.length)?.end ?? textEnd;
    const line = bytes.subarray(textStart - 1, end);
    // The same pet's line again: a repeated line, nothing lost.
    for (let d = pending[next]; d !== undefined && d.id === id; d = pending[++next])
      d.damage.kept = d.line.equals(line);
    merged.appendLine(id, index.get(id)?.status, bytes, textStart - 1, end, textStart, textEnd);
  }
  putPending(Number.POSITIVE_INFINITY);
  keyed.sort((a, b) => a - b);
  for (const d of damage) {
    if (d.kind !== 'missing' || d.between === undefined) continue;
    const [after, before] = d.between;
    let found = true;
    for (let id = after + 1; id < before && found; id++) found = merged.getText(id) !== undefined;
    d.kept = found;
  }
  return merged;
}
