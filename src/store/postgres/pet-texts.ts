import type { Sql } from 'postgres';
import { readWrittenPet, type PetBytes } from '../../pet/codec.js';
import type { PetStatus } from '../../pet/contract.js';

/** A page's text kept as the arena's own chunk from this size on; a smaller one is copied into the arena's chunks. */
export const IN_PLACE_BYTES = 64 * 1024;
/** Bytes of a driver's buffer beside a large page's text that the arena may keep with it. */
const SLACK_BYTES = 1024;
const NEWLINE = 0x0a;

/**
 * The pets with an id above `after` and at most `upTo`, ascending, `limit` at most, as one text: each
 * pet's JSON text as petJson writes it, built by the database from the columns, one a line (a JSON
 * text holds no raw newline: JSON.stringify escapes it in a name). `name_json` is the name's
 * JSON.stringify, written by this store alone (batch.ts, import.ts), and bigint prints as JavaScript
 * prints the same integer, so the bytes are petJson's. One value a page instead of four a pet: the
 * driver made an object and four strings of each row, and a fill of a million pets spent most of
 * its time there (bench/results.md, "The copy's fill and memory"). An empty Buffer when there is none.
 */
export async function readTexts(sql: Sql, after: number, upTo: number, limit: number): Promise<Buffer> {
  const [row] = await sql`
    SELECT string_agg('{"id":' || id || ',"name":' || name_json || ',"categoryId":' || category_id
      || coalesce(',"status":"' || status || '"', '') || '}', chr(10) ORDER BY id)
    FROM (SELECT id, name_json, category_id, status FROM petstore.pets
      WHERE id > ${after} AND id <= ${upTo} ORDER BY id LIMIT ${limit}) AS page`.raw();
  const text = row?.[0];
  if (text === null || text === undefined) return Buffer.alloc(0);
  // The driver's value is a view of the buffer it read the message into. A large page is kept by the
  // arena as it is: that buffer, when it holds little else (the message's header and the next
  // messages' few bytes), or else a copy of the text alone. A small page is copied pet by pet anyway.
  if (text.length < IN_PLACE_BYTES || text.buffer.byteLength - text.length <= SLACK_BYTES) return text;
  const own = Buffer.allocUnsafeSlow(text.length);
  text.copy(own);
  return own;
}

/**
 * Calls `each` with every pet of a page's text (readTexts): its id, its status and where its JSON text
 * lies, read from its two ends (the codec's readWrittenPet).
 * Returns how many pets there were.
 */
export function eachPet(
  page: Buffer,
  each: (id: number, status: PetStatus | undefined, start: number, end: number) => void,
): number {
  const pet: PetBytes = { id: 0, status: undefined, fieldsEnd: 0 };
  let count = 0;
  for (let start = 0; start < page.length; count++) {
    let end = page.indexOf(NEWLINE, start);
    if (end === -1) end = page.length;
    if (!readWrittenPet(page, start, end, pet)) throw new Error(`not a pet's text from the database at byte ${start}`);
    each(pet.id, pet.status, start, end);
    start = end + 1;
  }
  return count;
}
