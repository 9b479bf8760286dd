import { petJson, type Pet } from '../pet/pet.js';
import { SNAPSHOT_FORMAT } from './data-format.js';
import type { IdempotencyRecord } from './idempotency.js';

/** Writing the files data-format.ts describes: journal lines and the snapshot. */
const PETS_PER_CHUNK = 4096;

/** A pet's line in a journal or snapshot: its JSON, and the idempotency record it was created with, if any. */
export function petLine(pet: Pet, record: IdempotencyRecord | undefined): string {
  const text = petJson(pet);
  if (record === undefined) return text;
  return `${text.slice(0, -1)},"idempotency":{"scope":${JSON.stringify(record.scope)},"key":${JSON.stringify(record.key)},"at":${record.at}}}`;
}

/**
 * The snapshot text of `pets[0..count)`, covering the journals before `journal`, in chunks so that
 * writing a large one never blocks for long. `recordOf` gives the idempotency record to keep with a pet.
 */
export function* snapshotChunks(
  pets: readonly Pet[], count: number, journal: number, recordOf: (id: number) => IdempotencyRecord | undefined,
): Generator<string> {
  yield `{"format":"${SNAPSHOT_FORMAT}","journal":${journal},"pets":[\n`;
  for (let start = 0; start < count; start += PETS_PER_CHUNK) {
    const end = Math.min(start + PETS_PER_CHUNK, count);
    let chunk = '';
    for (let i = start; i < end; i++) {
      const pet = pets[i] as Pet;
      chunk += petLine(pet, recordOf(pet.id));
      chunk += i + 1 < count ? ',\n' : '\n';
    }
    yield chunk;
  }
  yield ']}\n';
}

export function journalLines(pets: readonly Pet[], records: ReadonlyArray<IdempotencyRecord | undefined>): string {
  let text = '';
  for (const [i, pet] of pets.entries()) text += petLine(pet, records[i]) + '\n';
  return text;
}
