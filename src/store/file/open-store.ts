import { join } from 'node:path';
import { IDEMPOTENCY_KEY_LIMIT, IDEMPOTENCY_WINDOW_SECONDS } from '../../pet/contract.js';
import { makeDirectory, nodeFileSystem, type FileSystem } from '../../lib/file-system.js';
import type { LockFile } from '../../lib/lock-file.js';
import { claimPrivateDirectory } from '../../lib/private-file.js';
import { reportToStderr } from '../../lib/system-error.js';
import { Compaction } from './compaction.js';
import { IdMarks } from './id-marks.js';
import { IDS_FILE, journalFile } from './file-names.js';
import { IdReservation, RESERVE_BLOCK } from './id-reservation.js';
import { IdempotencyIndex } from './idempotency.js';
import { Journal } from './journal.js';
import { loadDirectory, openStep, type LoadedDirectory } from './load.js';
import { DirectoryLock } from './lock.js';
import { recordOfLine } from './records/record-line.js';
import type { PetIndex } from '../pet-index.js';

export interface FileStoreOptions {
  /** The file operations to use; tests pass one that records calls or injects faults. */
  fileSystem?: FileSystem;
  /**
   * Journal bytes past which a new snapshot is written in the background. The bound in force is the
   * larger of this and the last snapshot's size, so that rewriting the snapshot costs O(1) per create.
   */
  compactAfterBytes?: number;
  /**
   * Told about a failure that no request is waiting on (a background compaction); default: a process warning on stderr.
   */
  onBackgroundError?: (error: unknown) => void;
  /** Told what opening found or repaired, in a sentence (an unclean stop, a torn line cut); default: a warning. */
  onRepair?: (message: string) => void;
  /** How long an idempotency key is remembered, in milliseconds (default 24 hours). */
  idempotencyWindowMs?: number;
  /**
   * Idempotency keys remembered per API key at most (default 100,000); past it a keyed create is refused until the
   * oldest expires.
   */
  idempotencyKeyLimit?: number;
}

/** What FileStore is made of once its directory is open. */
export interface OpenedStore {
  lock: LockFile;
  index: PetIndex;
  journal: Journal;
  compaction: Compaction;
  idempotency: IdempotencyIndex;
  /** The highest id handed out so far. */
  ids: IdMarks;
  /** The ids reserved durably ahead of `ids.handedOut`. */
  reservation: IdReservation;
  report: (error: unknown) => void;
}

const DEFAULT_COMPACT_AFTER = 4 * 1024 * 1024;
// Below this much free space at open, a probe write decides whether the store starts ready.
const LOW_SPACE_BYTES = 64 * 1024;

/**
 * Opens (creating if needed) the store in `dir`: takes the directory lock, loads what is there, cuts
 * a torn final journal line, and writes a format-4 snapshot where there is none.
 */
export async function openStore(dir: string, options: FileStoreOptions): Promise<OpenedStore> {
  const fs = options.fileSystem ?? nodeFileSystem;
  const report = options.onBackgroundError ?? reportToStderr;
  const tell = options.onRepair ?? reportToStderr;
  await prepareDirectory(fs, dir, tell);
  const lock = DirectoryLock.acquire(dir);
  try {
    const loaded = await loadDirectory(fs, dir);
    const { index, format, generations, lastId, follow } = loaded;
    const idempotency = rememberKeys(index, loaded.keyed, options);
    const newest = generations.at(-1);
    // Without a snapshot of format 4 (a new directory, or one of an earlier format), a new journal is
    // started and the snapshot naming it written before any create: from then on pets.json names every
    // journal needed, every line carries its checksum, and the journal's ids follow one by one.
    const upgrade = format !== 4 || newest === undefined;
    const ids = new IdMarks(lastId, follow);
    const journal = upgrade
      ? await openStep(`cannot create a journal in ${dir}`, () => Journal.create(fs, dir, (newest ?? 0) + 1, report))
      : await openStep(`cannot open the journal of generation ${newest} in ${dir} for writing`, () =>
          Journal.reopen(fs, dir, newest, loaded.journalLength),
        );
    const compaction = new Compaction(fs, dir, journal, index, {
      compactAfter: options.compactAfterBytes ?? DEFAULT_COMPACT_AFTER,
      snapshotBytes: loaded.snapshotBytes,
      oldGenerations: upgrade ? generations : generations.slice(0, -1),
      idempotency,
      ids,
      report,
    });
    // On a full disk the store still opens and serves reads (nothing at open needs a free block),
    // but is not ready: the probe fails, and FileStore's recovery timer brings readiness back.
    const available = await openStep(`cannot read the free space of ${dir}`, () => fs.availableBytes(dir));
    if (available < LOW_SPACE_BYTES) await journal.recover(report);
    const reservation = await reserveIds(fs, dir, loaded, report);
    tellRecovery(dir, loaded, tell);
    if (upgrade) await openStep(`cannot write ${dir}/pets.json`, () => compaction.compactNow());
    tellUpgrade(dir, format, tell);
    return { lock, index, journal, compaction, idempotency, ids, reservation, report };
  } catch (error) {
    lock.release();
    throw error;
  }
}

/** Makes the data directory, and private if it holds no data yet (saying so). */
async function prepareDirectory(fs: FileSystem, dir: string, tell: (message: string) => void): Promise<void> {
  await openStep(`cannot create data directory ${dir}`, () => makeDirectory(fs, dir));
  const tightened = await openStep(`cannot use data directory ${dir}`, async () => claimPrivateDirectory(dir));
  if (tightened !== undefined)
    tell(`made ${dir} private (mode ${tightened.toString(8)} → 700), as it held no data yet`);
}

/** The idempotency keys of the loaded pets, those within their window. */
function rememberKeys(index: PetIndex, keyed: readonly number[], options: FileStoreOptions): IdempotencyIndex {
  const idempotency = new IdempotencyIndex(
    options.idempotencyWindowMs ?? IDEMPOTENCY_WINDOW_SECONDS * 1000,
    (id) => recordOfLine(index.lineOf(id)),
    options.idempotencyKeyLimit ?? IDEMPOTENCY_KEY_LIMIT,
  );
  // Keys past their window are not loaded: they would only be dropped at the next compaction.
  const now = Date.now();
  for (const id of keyed) {
    // Read back one at a time: each record's strings are garbage at once, never all alive together.
    const record = recordOfLine(index.lineOf(id));
    if (record !== undefined) idempotency.restore(record, id, now);
  }
  return idempotency;
}

/**
 * The first create reserves a block of ids (id-reservation.ts). A directory without pets-ids.json
 * gets one now, before pets.json says format 4: as a clean stop leaves it, at the last id, unless
 * that id lies past the records (a torn append's margin, cut above): a stop there would be
 * missed by the records after a crash, so a block is reserved instead.
 */
async function reserveIds(
  fs: FileSystem,
  dir: string,
  loaded: LoadedDirectory,
  report: (error: unknown) => void,
): Promise<IdReservation> {
  const { lastId, follow } = loaded;
  const reservation = new IdReservation(fs, dir, lastId, loaded.reservation, report);
  const write = follow === lastId ? () => reservation.stop(lastId) : () => reservation.cover(lastId + 1);
  if (loaded.reservation === undefined) await openStep(`cannot write ${join(dir, IDS_FILE)}`, write);
  return reservation;
}

/** What opening found of a stop that was not clean: ids not known, a crash, a torn last line. */
function tellRecovery(dir: string, loaded: LoadedDirectory, tell: (message: string) => void): void {
  const { lastId, tornBytes } = loaded;
  if (loaded.idsMissing) {
    tell(
      `${join(dir, IDS_FILE)} is missing, so the ids handed out before the stop are not known: new ids start ` +
        `${RESERVE_BLOCK} past the records, at ${lastId + 1}`,
    );
  }
  if (loaded.reservation?.stopped === false) {
    tell(
      `unclean stop (a crash, kill -9 or a power loss) of ${dir}: ` +
        `its records end at pet ${loaded.index.lastId}; new ids continue from ${lastId + 1}, ` +
        `past every id reserved before the stop (${IDS_FILE}), as any of them may have reached a client`,
    );
  }
  if (tornBytes > 0) {
    const file = join(dir, journalFile(loaded.generations.at(-1) ?? 0));
    tell(
      `cut the last ${tornBytes} bytes of ${file}, after its last complete line: an append a crash cut short, ` +
        `never acknowledged`,
    );
  }
}

/** What rewriting a snapshot of an earlier format gained, once it is written. */
function tellUpgrade(dir: string, format: LoadedDirectory['format'], tell: (message: string) => void): void {
  if (format === 1 || format === 2) {
    tell(
      `${join(dir, 'pets.json')} was in format ${format}, whose records carry no checksums: rewritten in format 4, ` +
        `which checks every record`,
    );
  } else if (format === 3) {
    tell(
      `${join(dir, 'pets.json')} was in format 3, whose journals do not show a line missing from their middle: ` +
        `rewritten in format 4, whose do`,
    );
  }
}
