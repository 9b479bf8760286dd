import { join } from 'node:path';
import type { FileSystem } from '../../lib/file-system.js';
import { FileHold } from './file-hold.js';
import { replaceFile } from '../../lib/replace-file.js';
import { SNAPSHOT_FILE, journalFile } from './file-names.js';
import type { IdempotencyIndex } from './idempotency.js';
import type { Journal } from './journal.js';
import type { PetIndex } from '../pet-index.js';
import { snapshotChunks } from './snapshot.js';
import type { IdMarks } from './id-marks.js';

export interface CompactionOptions {
  /** Journal bytes past which a new snapshot is written (the bound in force is at least the snapshot's size). */
  compactAfter: number;
  snapshotBytes: number;
  /** Generations older than the journal's current one, still on disk. */
  oldGenerations: number[];
  /** Keys within their window are written into the snapshot with their pets; older ones are dropped. */
  idempotency: IdempotencyIndex;
  /** The store's id marks: the snapshot keeps `handedOut`, so that no id is handed out twice. */
  ids: IdMarks;
  report: (error: unknown) => void;
}

/** The pets a snapshot holds (the first `count`), the journal it names and the last id handed out at its rotation. */
interface SnapshotExtent {
  count: number;
  journal: number;
  lastId: number;
}

/**
 * Keeps the journals short: when the current one outgrows its bound, the journal is rotated and a
 * snapshot of every pet is written in the background; the journals it covers are then removed.
 * The snapshot names the journal it was written at, which exists before the snapshot does: replay
 * skips the journals before it, so a crash at any step loses nothing, and a directory is never
 * left with a snapshot that does not name the journals after it.
 */
export class Compaction {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #journal: Journal;
  readonly #index: PetIndex;
  readonly #compactAfter: number;
  readonly #report: (error: unknown) => void;
  readonly #idempotency: IdempotencyIndex;
  readonly #ids: IdMarks;
  #snapshotBytes: number;
  #oldGenerations: number[];
  /** Journal length past which the next compaction starts. */
  #compactAt: number;
  #running: Promise<void> | undefined;
  /** Replication's holds on the files: the snapshot is replaced and journals removed only while none is held. */
  readonly #hold = new FileHold();

  constructor(fs: FileSystem, dir: string, journal: Journal, index: PetIndex, options: CompactionOptions) {
    this.#fs = fs;
    this.#dir = dir;
    this.#journal = journal;
    this.#index = index;
    this.#compactAfter = options.compactAfter;
    this.#snapshotBytes = options.snapshotBytes;
    this.#oldGenerations = options.oldGenerations;
    this.#report = options.report;
    this.#idempotency = options.idempotency;
    this.#ids = options.ids;
    this.#compactAt = this.#bound();
  }

  /** The background snapshot under way, if any. */
  get running(): Promise<void> | undefined {
    return this.#running;
  }

  /** Holds the snapshot and the journals where they are until the returned release is called (file-hold.ts). */
  hold(): Promise<() => void> {
    return this.#hold.hold();
  }

  /** Runs between commits: starts a compaction when the journal has outgrown its bound. */
  async afterCommit(): Promise<void> {
    if (this.#running !== undefined || this.#journal.length <= this.#compactAt) return;
    try {
      this.#oldGenerations.push(await this.#rotate());
    } catch (error) {
      this.#report(error);
      // Go on with the current journal; try again only after as much again has been written, so a
      // full disk is not asked to create a file after every commit.
      this.#compactAt = this.#journal.length + this.#bound();
      return;
    }
    const covered = [...this.#oldGenerations];
    this.#running = this.#replace(covered, this.#extent())
      .catch(this.#report)
      .finally(() => {
        this.#running = undefined;
      });
  }

  /** At close, once no commit runs: one snapshot of every pet and the empty journal it names, nothing else. */
  async finish(): Promise<void> {
    try {
      // Ids handed out past the records (a refused create) need a snapshot naming them, or the stop looks like a loss.
      const unrecorded = this.#ids.handedOut !== this.#ids.recorded;
      if (this.#journal.length > 0 || this.#oldGenerations.length > 0 || unrecorded) await this.compactNow();
    } finally {
      await this.#journal.close();
    }
  }

  /** Now, while no commit runs: one snapshot of every pet, and only the empty journal it names left. */
  async compactNow(): Promise<void> {
    if (this.#journal.length > 0) this.#oldGenerations.push(await this.#rotate());
    // The snapshot's lastId is where the new journal's ids go on from.
    this.#ids.newJournal();
    await this.#replace([...this.#oldGenerations], this.#extent());
  }

  /** A new snapshot, then the journals it covers removed: once no file is held, and no hold granted meanwhile. */
  #replace(covered: readonly number[], extent: SnapshotExtent): Promise<void> {
    return this.#hold.change(async () => {
      await this.#writeSnapshot(extent);
      await this.#removeJournals(covered);
    });
  }

  /**
   * What the snapshot holds, fixed right after the rotation: a write held back (replication's hold) must not take in
   * the pets created meanwhile, which the new journal holds.
   */
  #extent(): SnapshotExtent {
    return { count: this.#index.size, journal: this.#journal.generation, lastId: this.#ids.handedOut };
  }

  /** Starts the next journal, whose ids go on from the snapshot's lastId (ids.handedOut, written right after). */
  async #rotate(): Promise<number> {
    const closed = await this.#journal.rotate(this.#report);
    this.#ids.newJournal();
    return closed;
  }

  /** Journal bytes that may accumulate after a snapshot: at least its own size, so rewriting it is O(1) per create. */
  #bound(): number {
    return Math.max(this.#compactAfter, this.#snapshotBytes);
  }

  async #writeSnapshot({ count, journal, lastId }: SnapshotExtent): Promise<void> {
    const now = Date.now();
    this.#idempotency.sweep(now);
    const chunks = snapshotChunks(this.#index, count, journal, lastId, (id) => this.#idempotency.isLive(id, now));
    this.#snapshotBytes = await replaceFile(this.#fs, join(this.#dir, SNAPSHOT_FILE), chunks, this.#report);
    this.#compactAt = this.#bound();
  }

  async #removeJournals(generations: readonly number[]): Promise<void> {
    if (generations.length === 0) return;
    for (const generation of generations) await this.#fs.unlink(join(this.#dir, journalFile(generation)));
    this.#oldGenerations = this.#oldGenerations.filter((g) => !generations.includes(g));
    await this.#fs.syncDir(this.#dir);
  }
}
