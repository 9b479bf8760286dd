import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { FileSystem } from '../../lib/file-system.js';
import { replaceFile } from '../../lib/replace-file.js';
import { errorCode } from '../../lib/system-error.js';
import { SNAPSHOT_FILE, journalGeneration } from './file-names.js';
import { writeReservation } from './id-reservation.js';
import { Journal } from './journal.js';
import { listDirectory, readDirectory, type LoadedDirectory } from './load.js';
import { snapshotChunks } from './snapshot.js';
import { StoreOpenError } from '../store.js';

// A compaction takes a rotation, a snapshot write and a few unlinks: 20 tries with a growing pause
// (about 2 s in all) outlast a few of them.
const ATTEMPTS = 20;

/**
 * Every pet of a data directory that a server may be writing right now, read without its lock (the
 * server is never held up). The listing, the snapshot's identity and the journal generations are
 * taken before and after reading; if any changed, a compaction ran meanwhile and the read is done
 * again. Generations only grow and every compaction starts one, so an unchanged set means none ran.
 * A torn last journal line is a create not yet acknowledged and is left out, as at start. Damaged
 * records are left out too, and listed in `damage`: what to do about them is the caller's to say.
 */
export async function readLiveDirectory(fs: FileSystem, dir: string): Promise<LoadedDirectory> {
  for (let attempt = 1; ; attempt++) {
    const before = await directoryState(fs, dir);
    let result: LoadedDirectory | StoreOpenError;
    try {
      result = await readDirectory(fs, dir, before.names);
    } catch (error) {
      // A journal removed under the read looks like a broken directory: only a stable one is judged.
      if (!(error instanceof StoreOpenError)) throw error;
      result = error;
    }
    if ((await directoryState(fs, dir)).key === before.key) {
      if (result instanceof StoreOpenError) throw result;
      return result;
    }
    if (attempt === ATTEMPTS)
      throw new StoreOpenError(`${dir} kept changing while it was read (${ATTEMPTS} attempts); try again`);
    await new Promise((resolve) => setTimeout(resolve, attempt * 10));
  }
}

async function directoryState(fs: FileSystem, dir: string): Promise<{ names: string[]; key: string }> {
  const names = await listDirectory(fs, dir);
  const generations = names
    .map(journalGeneration)
    .filter((g) => g !== undefined)
    .sort((a, b) => a - b);
  let snapshot = 'none';
  try {
    const s = await stat(join(dir, SNAPSHOT_FILE), { bigint: true });
    snapshot = `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
  } catch (error) {
    if (errorCode(error) !== 'ENOENT')
      throw new StoreOpenError(`cannot read ${join(dir, SNAPSHOT_FILE)} (${errorCode(error) ?? String(error)})`, {
        cause: error,
      });
  }
  return { names, key: `${generations.join(',')} ${snapshot}` };
}

/**
 * Writes the pets of `loaded` into the new directory `dir` as a stopped store leaves it: pets.json
 * naming journal 1, pets-ids.json saying it stopped at `lastId`, and that journal, empty; all durable (of the pets, the
 * first `count`). Each pet's line is checked against its
 * checksum as it is copied. A server started there continues after the highest id `loaded` tells of.
 * Unlike the store, the journal comes last: a copy cut off before it is refused, not served.
 */
export async function writeStoreCopy(
  fs: FileSystem,
  dir: string,
  { index, lastId }: LoadedDirectory,
  report: (error: unknown) => void,
  count = index.size,
): Promise<void> {
  // Idempotency keys go along, so that a retry against the restored copy is still a replay; the
  // server started on it drops those past their window.
  await replaceFile(
    fs,
    join(dir, SNAPSHOT_FILE),
    snapshotChunks(index, count, 1, lastId, () => true),
    report,
  );
  // As a clean stop leaves it: a server started on the copy goes on from lastId, without a gap.
  await writeReservation(fs, dir, { reserved: lastId, stopped: true }, report);
  await (await Journal.create(fs, dir, 1, report)).close();
}
