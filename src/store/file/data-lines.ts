import { SNAPSHOT_FORMAT } from './data-format.js';
import type { IdempotencyRecord } from './idempotency.js';
import type { PetIndex } from './pet-index.js';

/** Writing the files data-format.ts describes: journal lines and the snapshot. */
const CHUNK_BYTES = 64 * 1024;
const COMMA_NEWLINE = Buffer.from(',\n');
const NEWLINE = Buffer.from('\n');

/** A pet's line: its JSON text, with the idempotency record it was created with, if any, as one more member. */
function withRecord(text: string, record: IdempotencyRecord | undefined): string {
  if (record === undefined) return text;
  return `${text.slice(0, -1)},"idempotency":{"scope":${JSON.stringify(record.scope)},"key":${JSON.stringify(record.key)},"at":${record.at}}}`;
}

/**
 * The snapshot of the first `count` pets of `index`, covering the journals before `journal`, as
 * Buffers of about 64 KiB: the pets' texts are copied as bytes, never made into strings, so writing
 * a large snapshot needs memory for one chunk and never blocks for long. `recordOf` gives the
 * idempotency record to keep with a pet.
 */
export function* snapshotChunks(
  index: PetIndex, count: number, journal: number, recordOf: (id: number) => IdempotencyRecord | undefined,
): Generator<Uint8Array> {
  yield Buffer.from(`{"format":"${SNAPSHOT_FORMAT}","journal":${journal},"pets":[\n`);
  let out = Buffer.allocUnsafe(CHUNK_BYTES);
  let used = 0;
  let written = 0;
  for (const [id, text] of index.texts(count)) {
    const record = recordOf(id);
    const line = record === undefined ? text : Buffer.from(withRecord(text.toString(), record));
    const end = ++written < count ? COMMA_NEWLINE : NEWLINE;
    if (used + line.length + end.length > out.length) {
      yield out.subarray(0, used);
      out = Buffer.allocUnsafe(Math.max(CHUNK_BYTES, line.length + end.length));
      used = 0;
    }
    used += line.copy(out, used);
    used += end.copy(out, used);
  }
  if (used > 0) yield out.subarray(0, used);
  yield Buffer.from(']}\n');
}

/** Journal lines of pets given as their texts (`petJson`), each with its idempotency record, if any. */
export function journalLines(texts: readonly string[], records: ReadonlyArray<IdempotencyRecord | undefined>): string {
  let lines = '';
  for (const [i, text] of texts.entries()) lines += withRecord(text, records[i]) + '\n';
  return lines;
}
