import { join } from 'node:path';
import type { FileSystem } from '../../lib/file-system.js';
import { UnsafeFileError } from '../../lib/private-file.js';
import { errorCode } from '../../lib/system-error.js';
import { namedId, StoreDamagedError, type Damage } from './damage.js';
import { legacyFormat } from './records/data-format.js';
import { readJournal } from './records/journal-lines.js';
import { readLegacyJournal, readLegacySnapshot } from './records/legacy-format.js';
import { MIN_LINE_BYTES } from './records/record-line.js';
import type { DisplacedLine, ScannedRecord, ScanState } from './records/record-scan.js';
import { setBack } from './displaced.js';
import { checksummedFormat, readSnapshot } from './snapshot.js';
import { IDS_FILE, SNAPSHOT_FILE, isTempFile, journalFile, journalGeneration } from './file-names.js';
import { readReservation, RESERVE_BLOCK, type Reservation } from './id-reservation.js';
import { PetIndex } from '../pet-index.js';
import { StoreOpenError } from '../store.js';

/** What a data directory holds, checked and in memory. */
export interface LoadedDirectory {
  index: PetIndex;
  /**
   * The format pets.json is in: 4; 3, whose journals' ids may jump without saying so; or 1 or 2, whose
   * records carry no checksums (none: a new directory).
   */
  format: 1 | 2 | 3 | 4 | undefined;
  snapshotBytes: number;
  /** The first journal generation pets.json does not cover; undefined without a pets.json that says. */
  snapshotJournal: number | undefined;
  /** The highest id ever handed out that the files tell of (pets.json keeps it past the last pet's). */
  lastId: number;
  /**
   * Format 4: the id the newest journal's lines have reached (its last pet's, or skip line's); the next line follows
   * it.
   */
  follow: number;
  /** Journal generations on disk, ascending; the last is the one to append to. */
  generations: number[];
  /** Length of the newest journal's complete lines: a torn last line lies beyond it. */
  journalLength: number;
  /** Bytes of a torn last line of the newest journal (a create cut off by a crash, never acknowledged). */
  tornBytes: number;
  /**
   * The ids of the pets whose lines carry an idempotency record, ascending (expired ones included):
   * only the ids, so that a million keys are not all made into strings at once; each record is read
   * back from its line (record-line.ts, recordOfLine).
   */
  keyed: number[];
  /** Every damaged place found; the pets in it are not in `index`. */
  damage: Damage[];
  /** What pets-ids.json says (id-reservation.ts); undefined when it is missing or damaged. */
  reservation: Reservation | undefined;
  /** Format 4 without pets-ids.json: `lastId` has a block's margin past the records, and whoever opens says so. */
  idsMissing: boolean;
}

/**
 * Reads a data directory into an index: removes temp files a crash left, then reads it (readDirectory).
 * Refuses with a StoreOpenError naming the file when the data cannot be used, a StoreDamagedError
 * when any record is damaged.
 */
export async function loadDirectory(fs: FileSystem, dir: string): Promise<LoadedDirectory> {
  const names = await listDirectory(fs, dir);
  for (const name of names.filter(isTempFile)) {
    await openStep(`cannot remove the leftover temp file ${join(dir, name)}`, () => fs.unlink(join(dir, name)));
  }
  const loaded = await readDirectory(fs, dir, names);
  if (loaded.damage.length > 0) throw new StoreDamagedError(loaded.damage);
  return loaded;
}

export const listDirectory = (fs: FileSystem, dir: string): Promise<string[]> =>
  openStep(`cannot list data directory ${dir}`, () => fs.readdir(dir));

/**
 * Loads the snapshot and replays the journals of `names` in order, changing nothing on disk. Damaged
 * records are listed in `damage` and left out, never served. With a snapshot that names its first
 * journal, the journals from it on must all be there, or the directory is refused as incomplete
 * (test/copy-while-running.test.ts tells how a copy comes to miss one).
 */
export async function readDirectory(fs: FileSystem, dir: string, names: readonly string[]): Promise<LoadedDirectory> {
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  const bytes = await readIfExists(fs, snapshotPath);
  const generations = names
    .map(journalGeneration)
    .filter((g): g is number => g !== undefined)
    .sort((a, b) => a - b);
  // A directory without pets.json but with journals was made by the first version, before pets.json named its format.
  const format =
    bytes === undefined
      ? generations.length > 0
        ? 1
        : undefined
      : (checksummedFormat(bytes, snapshotPath) ?? legacyFormat(bytes, snapshotPath));
  const reading: Reading = { index: new PetIndex(), keyed: [], damage: [], displaced: [], follow: undefined };
  const snapshot = readSnapshotFile(reading, snapshotPath, bytes, format);
  const snapshotJournal = snapshot.journal;
  // Journals before the snapshot's generation are in it already (a crash came before they were removed).
  const live = generations.filter((g) => g >= (snapshotJournal ?? 0));
  checkComplete(dir, bytes !== undefined, snapshotJournal, live);
  const { journalLength, tornBytes } = await readJournals(fs, dir, reading, live, format, snapshotJournal);
  const { keyed, follow } = reading;
  // Intact lines out of order go back in id order (a start is refused all the same: they are damage).
  const index = setBack(reading.index, reading.displaced, reading.damage, keyed);
  const damage = reading.damage.filter((d) => !(d.kind === 'missing' && d.kept === true));
  // Ids damaged or torn bytes may have held count too, so that no id is handed out twice (repair).
  let lastId = [...damage.map((d) => namedId(d) ?? 0), ...trailingIds(damage)].reduce(
    (a, b) => Math.max(a, b),
    Math.max(snapshot.lastId, index.lastId + (tornBytes > 0 ? mostPetsIn(tornBytes) : 0)),
  );
  const recordsReach = follow !== undefined && follow >= 0 ? follow : lastId;
  // Read after the journals: every line read above was acknowledged within the reservation read here.
  const { reservation, missing } = await readIds(fs, dir, format, lastId, damage);
  // Without a reservation to go by, a block past the records: as far as a store could have gone.
  lastId = Math.max(
    lastId,
    reservation?.reserved ?? 0,
    format === 4 && reservation === undefined ? lastId + RESERVE_BLOCK : 0,
  );
  return {
    index,
    format,
    snapshotBytes: bytes?.length ?? 0,
    snapshotJournal,
    lastId,
    follow: recordsReach,
    generations,
    journalLength,
    tornBytes,
    keyed,
    damage,
    reservation,
    idsMissing: missing,
  };
}

/** What reading the files of a directory builds up, file after file. */
interface Reading {
  index: PetIndex;
  keyed: number[];
  damage: Damage[];
  /** Intact lines found out of order, set back in order once every file is read. */
  displaced: DisplacedLine[];
  /** Format 4: each journal line's id follows the one before, from the snapshot's last id on (NaN: not known). */
  follow: number | undefined;
}

const scanState = (reading: Reading, file: string, content: Buffer): ScanState => ({
  file,
  bytes: content,
  verify: true,
  lastId: reading.index.lastId,
  follow: reading.follow,
  damage: reading.damage,
  displaced: reading.displaced,
});

/** Takes each intact record of `content` into the index as it is now. */
function keeper(reading: Reading, content: Buffer): (r: ScannedRecord) => void {
  const { index, keyed } = reading;
  return (r) => {
    index.appendInPlace(r.id, r.status, content, r.textStart, r.textEnd);
    if (r.keyed) keyed.push(r.id);
  };
}

/** Reads pets.json into `reading`: the journal generation it names first, and the last id it tells of. */
function readSnapshotFile(
  reading: Reading,
  path: string,
  bytes: Buffer | undefined,
  format: LoadedDirectory['format'],
): { journal: number | undefined; lastId: number } {
  if (bytes === undefined) return { journal: undefined, lastId: 0 };
  if (format === 3 || format === 4) {
    // Room for as many pets as the snapshot can hold, in typed arrays whose untouched pages cost nothing.
    reading.index = new PetIndex(Math.ceil(bytes.length / MIN_LINE_BYTES));
    const snapshot = readSnapshot(scanState(reading, path, bytes), keeper(reading, bytes));
    if (format === 4) reading.follow = snapshot.lastId ?? Number.NaN;
    return { journal: snapshot.journal, lastId: snapshot.lastId ?? 0 };
  }
  const legacy = readLegacySnapshot(bytes, path, reading.keyed);
  reading.index = legacy.index;
  return { journal: legacy.journal, lastId: 0 };
}

/** Replays the journals `live` in order into `reading`; the newest's complete length and torn bytes. */
async function readJournals(
  fs: FileSystem,
  dir: string,
  reading: Reading,
  live: readonly number[],
  format: LoadedDirectory['format'],
  snapshotJournal: number | undefined,
): Promise<{ journalLength: number; tornBytes: number }> {
  let journalLength = 0;
  let tornBytes = 0;
  const snapshotLastId = reading.index.lastId;
  for (const [i, generation] of live.entries()) {
    const path = join(dir, journalFile(generation));
    const journal = await openStep(`cannot read ${path}`, () => fs.readFile(path));
    if (format === 3 || format === 4) {
      const state = scanState(reading, path, journal);
      ({ completeLength: journalLength, tornBytes } = readJournal(
        state,
        i === live.length - 1,
        keeper(reading, journal),
      ));
      reading.follow = state.follow;
    } else {
      // Format 1 does not say which journals its snapshot covers: lines at or below its last id are in it.
      journalLength = readLegacyJournal(
        journal,
        path,
        reading.index,
        snapshotJournal === undefined ? snapshotLastId : 0,
        reading.keyed,
      );
      if (journalLength < journal.length && i < live.length - 1)
        throw new StoreOpenError(`${path} ends in an incomplete line but is not the newest journal`);
      tornBytes = journal.length - journalLength;
    }
  }
  return { journalLength, tornBytes };
}

/**
 * pets-ids.json, when the directory is of format 4 (earlier formats had none: ids go on from the
 * records). Damaged, it is damage; missing, ids past the records cannot be known. After a clean stop
 * the records reach the last id it names, or pets were lost since.
 */
async function readIds(
  fs: FileSystem,
  dir: string,
  format: LoadedDirectory['format'],
  recordsLastId: number,
  damage: Damage[],
): Promise<{ reservation: Reservation | undefined; missing: boolean }> {
  const path = join(dir, IDS_FILE);
  const bytes = await readIfExists(fs, path);
  const reservation = bytes === undefined ? undefined : readReservation(bytes);
  const problem = (reason: string, held: Buffer): void => {
    damage.push({ file: path, line: 1, offset: 0, bytes: held, reason, id: undefined, between: undefined });
  };
  if (bytes !== undefined && reservation === undefined) {
    problem('damaged: the ids reserved before the stop cannot be read', bytes);
  } else if (reservation?.stopped === true && recordsLastId < reservation.reserved) {
    const lost =
      reservation.reserved === recordsLastId + 1
        ? `pet ${reservation.reserved} may have been lost`
        : `pets ${recordsLastId + 1}–${reservation.reserved} may have been lost`;
    problem(
      `the store was stopped cleanly with ids up to ${reservation.reserved} handed out, but its records end at ` +
        `${recordsLastId}: ${lost}`,
      Buffer.alloc(0),
    );
  }
  return { reservation, missing: bytes === undefined && format === 4 };
}

/**
 * How many pets' lines `bytes` damaged or torn bytes can have held, one at least: each line takes
 * MIN_LINE_BYTES and a line break, but for the last, which may have been cut short.
 */
const mostPetsIn = (bytes: number): number => Math.max(1, Math.floor((bytes + 1) / (MIN_LINE_BYTES + 1)));

/**
 * The highest ids damaged places with no intact pet after them may have held: as many ids above the
 * pet before them as all their bytes together can hold lines (two damaged lines in a row hold two
 * pets; ids handed out to creates that failed can leave gaps this cannot see).
 */
function trailingIds(damage: readonly Damage[]): number[] {
  const held = new Map<number, number>();
  for (const d of damage) {
    if (d.between?.[1] === Number.POSITIVE_INFINITY)
      held.set(d.between[0], (held.get(d.between[0]) ?? 0) + mostPetsIn(d.bytes.length));
  }
  return [...held].map(([after, pets]) => after + pets);
}

/**
 * The journals the data needs are all there, without a gap: from the snapshot's generation (formats 2, 3),
 * from 1 without a snapshot (where the store began), consecutive after a format 1 snapshot.
 */
function checkComplete(
  dir: string,
  hasSnapshot: boolean,
  snapshotJournal: number | undefined,
  live: readonly number[],
): void {
  const first = !hasSnapshot ? 1 : (snapshotJournal ?? live[0]);
  if (first === undefined || (!hasSnapshot && live.length === 0)) return;
  const gap = live.findIndex((g, i) => g !== first + i);
  if (live.length > 0 && gap === -1) return;
  const missing = join(dir, journalFile(first + Math.max(gap, 0)));
  const snapshotPath = join(dir, SNAPSHOT_FILE);
  const found = !hasSnapshot
    ? `there is no ${snapshotPath}`
    : snapshotJournal === undefined
      ? 'the journals are not consecutive'
      : `${snapshotPath} covers the journals before ${snapshotJournal}`;
  throw new StoreOpenError(
    `incomplete data directory: ${found}, but ${missing} is missing; the pets in it would be lost. ` +
      'A copy made while the server runs misses a journal that the server removed during the copy: ' +
      'copy it again, with the "backup" command or from a stopped server.',
  );
}

/** Runs one step of opening the store; a system error becomes a StoreOpenError that says what failed. */
export async function openStep<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (error) {
    throw openError(what, error);
  }
}

/** A StoreOpenError saying what failed; a refused unsafe file is named by its own message. */
function openError(what: string, error: unknown): StoreOpenError {
  if (error instanceof StoreOpenError) return error;
  if (error instanceof UnsafeFileError) return new StoreOpenError(error.message, { cause: error });
  return new StoreOpenError(`${what} (${errorCode(error) ?? String(error)})`, { cause: error });
}

async function readIfExists(fs: FileSystem, path: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if (errorCode(error) === 'ENOENT') return undefined;
    throw openError(`cannot read ${path}`, error);
  }
}
