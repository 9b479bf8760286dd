import type { Damage } from '../damage.js';
import { intactRecordAt, scanRecords, type ScannedRecord, type ScanState } from './record-scan.js';

/** What a journal holds besides its pets. */
export interface JournalContents {
  /** Bytes of complete lines; a torn last line (a crash mid-append, never acknowledged) lies beyond. */
  completeLength: number;
  tornBytes: number;
}

/**
 * Reads a journal of format 3 or 4 (data-format.ts) into `onRecord`, every line checked against its checksum;
 * damage goes to `state.damage`. Only the newest journal may end in a torn line: an append cut off by
 * a crash before its fdatasync returned, so never acknowledged, and left out. That is told apart from
 * damage by what a torn append can look like: some first bytes of lines, perhaps followed by zeros
 * where the file grew but its data did not reach the disk. An intact record there followed by any
 * other byte is an acknowledged pet whose line break is damaged; damage before the last line break is
 * damage wherever it is, also in the newest journal's last complete line.
 */
export function readJournal(state: ScanState, newest: boolean, onRecord: (r: ScannedRecord) => void): JournalContents {
  const { bytes } = state;
  state.verify = true;
  const complete = bytes.lastIndexOf(0x0a) + 1;
  const line = scanRecords(state, 0, complete, 1, false, onRecord);
  const torn = bytes.length - complete;
  if (torn === 0) return { completeLength: complete, tornBytes: 0 };
  // `id`: the intact pet whose line break is damaged, which no pet is lost with.
  const problem = (reason: string, id?: number): Damage => ({
    file: state.file,
    line,
    offset: complete,
    bytes: Buffer.from(bytes.subarray(complete)),
    reason,
    id,
    between: id === undefined ? [state.lastId, Number.POSITIVE_INFINITY] : undefined,
  });
  if (!newest) {
    state.damage.push(problem('the journal ends in an incomplete line but is not the newest journal'));
  } else {
    const record = intactRecordAt(bytes, complete, bytes.length);
    if (record !== undefined && record.end < bytes.length && bytes[record.end] !== 0) {
      state.damage.push(problem('the line break after the last pet is damaged', record.id));
      // The pet itself is intact: whoever repairs keeps it.
      if (record.id > state.lastId) {
        state.lastId = record.id;
        onRecord(record);
      }
    }
  }
  return { completeLength: complete, tornBytes: torn };
}
