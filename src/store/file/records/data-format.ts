import { StoreOpenError } from '../../store.js';

/**
 * The files of a data directory, readable text whose every pet is a JSON line:
 * - `pets.json`, the snapshot (snapshot.ts): a head naming the first journal generation G it does not
 *   cover, one line per pet, and an end with the pet count, the highest id handed out and the CRC-32
 *   of the whole file. It holds every pet of the journals before G, and journals G, G+1, … up to the
 *   newest must all be there: that makes a copy that lost a journal recognisable (see
 *   test/copy-while-running.test.ts).
 * - `pets-journal.<n>.jsonl`, journals (journal-lines.ts): one line per pet, appended by each commit
 *   after the snapshot. They carry no header: their format is the directory's, named by pets.json,
 *   which every directory this version writes holds. A new line format must bump the snapshot format.
 *   In format 4 a journal's ids go up by one from the snapshot's lastId, and ids handed out without a
 *   pet's line are written down by a skip line (skip-line.ts): a line missing from the middle shows.
 * Each pet's line (record-line.ts) is `[pet, record?, "crc"]`: the pet's text exactly as the API
 * returns it (int64 digits kept exactly), the idempotency record it was created with while that
 * is within its window, and the CRC-32 of the line before it.
 *
 * Format 4 is this layout. Format 3, the same but for journals whose ids could jump without a word,
 * and formats 1 and 2 (legacy-format.ts), without checksums, are still read and rewritten in format 4
 * when the store opens them.
 */
export const FORMAT_NAME = 'petstore-pets';
export const FORMAT_VERSION = 4;

/**
 * The version a snapshot's first bytes name (`3` of `"format":"petstore-pets/3"`), or undefined when they name none.
 */
export function namedFormat(bytes: Buffer): string | undefined {
  const named = /^\s*\{\s*"format"\s*:\s*"petstore-pets\/([^"]{0,16})"/.exec(bytes.toString('latin1', 0, 100));
  return named?.[1];
}

/**
 * The format of a snapshot that is not laid out as formats 3 and 4 are (checksummedFormat): the version its first bytes
 * name, checked (a newer one is refused, saying so), or 1 when they name none (a hand-made file).
 */
export function legacyFormat(bytes: Buffer, file: string): 1 | 2 {
  const named = /^\s*\{\s*"format"\s*:\s*"([^"]{0,64})"/.exec(bytes.toString('latin1', 0, 100));
  const version = named === null ? 1 : checkFormat(named[1], file);
  if (version === 3 || version === 4)
    throw new StoreOpenError(`${file} names format ${version} but is not laid out as format ${version} is`);
  return version;
}

/** Refuses a format this version does not read, and says so plainly when a newer version wrote it. */
export function checkFormat(format: unknown, file: string): 1 | 2 | 3 | 4 {
  const version =
    typeof format === 'string' && format.startsWith(`${FORMAT_NAME}/`) ? format.slice(FORMAT_NAME.length + 1) : '';
  if (version === '1' || version === '2' || version === '3' || version === '4') return Number(version) as 1 | 2 | 3 | 4;
  if (/^[1-9][0-9]{0,8}$/.test(version) && Number(version) > FORMAT_VERSION) {
    throw new StoreOpenError(
      `${file} was written by a newer version of the server (format ${String(format)}); upgrade the server to use ` +
        `this data`,
    );
  }
  throw new StoreOpenError(
    `${file} is not a pet store snapshot (expected "format": "${FORMAT_NAME}/${FORMAT_VERSION}")`,
  );
}
