import { join } from 'node:path';
import type { FileSystem, StoreFile } from '../../lib/file-system.js';
import { journalFile } from './file-names.js';

// Bytes written past the durable end, fdatasync'ed and cut again, to find out whether the disk takes
// writes again after a failure: a truncate alone succeeds even on a full disk.
const PROBE = new Uint8Array(4096);

/**
 * The append-only journal of the current generation (`pets-journal.<n>.jsonl`). Everything before
 * `length` was fdatasync'ed and acknowledged; after a failed write the journal is `failed` until
 * `recover()` has cut it back to that length and a probe write has succeeded.
 */
export class Journal {
  readonly #fs: FileSystem;
  readonly #dir: string;
  #file: StoreFile;
  #generation: number;
  #length: number;
  #failure: Error | undefined;

  private constructor(fs: FileSystem, dir: string, file: StoreFile, generation: number, length: number) {
    this.#fs = fs;
    this.#dir = dir;
    this.#file = file;
    this.#generation = generation;
    this.#length = length;
  }

  /** A new, empty journal of `generation`; its name is made durable before any line is written. */
  static async create(
    fs: FileSystem,
    dir: string,
    generation: number,
    report: (error: unknown) => void,
  ): Promise<Journal> {
    const path = join(dir, journalFile(generation));
    const file = await fs.open(path, 'wx');
    try {
      await fs.syncDir(dir);
    } catch (error) {
      // Leave no half-made journal behind: the next rotation must be able to create it again.
      await file.close().catch(report);
      await fs.unlink(path).catch(report);
      throw error;
    }
    return new Journal(fs, dir, file, generation, 0);
  }

  /** The existing journal of `generation`, cut back to `length` (a torn last line lies beyond). */
  static async reopen(fs: FileSystem, dir: string, generation: number, length: number): Promise<Journal> {
    const file = await fs.open(join(dir, journalFile(generation)), 'r+');
    await file.truncate(length);
    await file.datasync();
    return new Journal(fs, dir, file, generation, length);
  }

  get generation(): number {
    return this.#generation;
  }

  /** Durable length in bytes. */
  get length(): number {
    return this.#length;
  }

  /** The error of the last failed write, until a recovery succeeds. */
  get failure(): Error | undefined {
    return this.#failure;
  }

  /**
   * Appends `bytes` and fdatasyncs them; only then are they part of `length`. On failure the journal
   * is marked failed and the error thrown: the fsync is never retried and then trusted, since Linux
   * may already have dropped the pages it could not write.
   */
  async append(bytes: Uint8Array): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    try {
      await this.#file.write(bytes, this.#length);
      await this.#file.datasync();
    } catch (error) {
      this.#failure = error instanceof Error ? error : new Error(String(error));
      throw error;
    }
    this.#length += bytes.length;
  }

  /**
   * After a failed write: reopen the file, cut it back to its durable length, and prove with a probe
   * write that the disk takes writes again. Returns whether the journal is usable again.
   */
  async recover(report: (error: unknown) => void): Promise<boolean> {
    const path = join(this.#dir, journalFile(this.#generation));
    try {
      await this.#file.close().catch(report); // the handle that failed
      this.#file = await this.#fs.open(path, 'r+');
      // First cut what the failed write left, so a probe that fails in turn leaves only a torn tail.
      await this.#file.truncate(this.#length);
      await this.#file.datasync();
      await this.#file.write(PROBE, this.#length);
      await this.#file.datasync();
      await this.#file.truncate(this.#length);
      await this.#file.datasync();
      this.#failure = undefined;
      return true;
    } catch (error) {
      this.#failure = error instanceof Error ? error : new Error(String(error));
      return false;
    }
  }

  /** Starts the next generation; returns the one closed. The current journal is kept if that fails. */
  async rotate(report: (error: unknown) => void): Promise<number> {
    const next = await Journal.create(this.#fs, this.#dir, this.#generation + 1, report);
    const previous = this.#file;
    const closed = this.#generation;
    this.#file = next.#file;
    this.#generation = next.#generation;
    this.#length = 0;
    await previous.close().catch(report);
    return closed;
  }

  close(): Promise<void> {
    return this.#file.close();
  }
}
