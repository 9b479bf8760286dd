import { join } from 'node:path';
import { crc32, readHex8, writeHex8 } from '../../lib/crc32.js';
import type { FileSystem } from '../../lib/file-system.js';
import { replaceFile } from '../../lib/replace-file.js';
import { IDS_FILE } from './file-names.js';
import { StoreUnavailableError } from '../store.js';

/**
 * `pets-ids.json`: the ids reserved ahead of the ones handed out, so that an id a client was given is
 * never given again, however many journal lines a crash or a disk loses (PostgreSQL logs its
 * sequences ahead for the same reason):
 *
 *     {"format":"petstore-ids/1","reserved":2048,"stopped":false,"crc":"…"}
 *
 * Ids up to `reserved` may have been handed out. A store writes the file (atomically and durably, as
 * pets.json) before it hands out an id past it, a block ahead, and in the background once less than
 * half a block is left, a block further, so that a create rarely waits for it and the file is written
 * once per block. A clean stop writes the last id handed out with `"stopped":true`: a start after that
 * goes on from it without a gap, and records that end below it have lost pets. After any other stop,
 * new ids start past `reserved`: the gap is at most a block and a half, and a batch.
 */
export const RESERVE_BLOCK = 1024;
const FORMAT = 'petstore-ids/1';
const LINE =
  /^\{"format":"petstore-ids\/1","reserved":(0|[1-9][0-9]{0,15}),"stopped":(true|false),"crc":"[0-9a-f]{8}"\}\n$/;
const CRC_MEMBER = '"crc":"';

/** What pets-ids.json says. */
export interface Reservation {
  reserved: number;
  /** Written by a clean stop: `reserved` is then the last id handed out. */
  stopped: boolean;
}

/** The reservation in `bytes`, or undefined when they are not an intact one. */
export function readReservation(bytes: Buffer): Reservation | undefined {
  const match = LINE.exec(bytes.toString('latin1', 0, Math.min(bytes.length, 200)));
  if (match === null || bytes.length > 200) return undefined;
  const crcAt = bytes.length - 11;
  if (crc32(bytes, 0, crcAt - CRC_MEMBER.length) !== readHex8(bytes, crcAt)) return undefined;
  return { reserved: Number(match[1]), stopped: match[2] === 'true' };
}

export function reservationText({ reserved, stopped }: Reservation): Buffer {
  const line = Buffer.from(
    `{"format":"${FORMAT}","reserved":${reserved},"stopped":${stopped},${CRC_MEMBER}00000000"}\n`,
  );
  const crcAt = line.length - 11;
  writeHex8(crc32(line, 0, crcAt - CRC_MEMBER.length), line, crcAt);
  return line;
}

/** Writes pets-ids.json into `dir`. */
export function writeReservation(
  fs: FileSystem,
  dir: string,
  reservation: Reservation,
  report: (error: unknown) => void,
): Promise<number> {
  return replaceFile(fs, join(dir, IDS_FILE), [reservationText(reservation)], report);
}

/** A store's reservation: one write at a time, so that a smaller one never lands after a larger. */
export class IdReservation {
  readonly #fs: FileSystem;
  readonly #dir: string;
  readonly #report: (error: unknown) => void;
  #reserved: number;
  /** The last id, when the file on disk says the store stopped there: nothing to write at a stop then. */
  #stoppedAt: number | undefined;
  #writing: Promise<void> | undefined;

  /** `reserved`: the highest id that may have been handed out; `onDisk`: what pets-ids.json says now. */
  constructor(
    fs: FileSystem,
    dir: string,
    reserved: number,
    onDisk: Reservation | undefined,
    report: (error: unknown) => void,
  ) {
    this.#fs = fs;
    this.#dir = dir;
    this.#reserved = reserved;
    this.#stoppedAt = onDisk?.stopped === true && onDisk.reserved === reserved ? reserved : undefined;
    this.#report = report;
  }

  /** Ids up to this may be handed out now. */
  get reserved(): number {
    return this.#reserved;
  }

  /** Whether ids up to `upTo` may be handed out now, with nothing to wait for (checked on every commit: no promise). */
  covers(upTo: number): boolean {
    return upTo <= this.#reserved && upTo <= Number.MAX_SAFE_INTEGER;
  }

  /**
   * Before ids `last + 1` to `last + count` are handed out: why they may not be, or undefined once they
   * are reserved. Only a batch that finds too few ids reserved waits, for a block more.
   */
  async beforeTaking(last: number, count: number): Promise<Error | undefined> {
    if (last + count > Number.MAX_SAFE_INTEGER)
      return new Error('pet ids are exhausted: the next id would not be a safe integer');
    if (last + count <= this.#reserved) return undefined;
    try {
      await this.cover(last + count);
      return undefined;
    } catch (error) {
      return new StoreUnavailableError('ids could not be reserved durably; the pet was not stored', { cause: error });
    }
  }

  /** Reserves a block past `upTo` unless ids up to it are reserved already; throws when the write fails. */
  async cover(upTo: number): Promise<void> {
    while (this.#writing !== undefined) await this.#writing.catch(() => undefined);
    if (upTo <= this.#reserved) return;
    await this.#write(upTo + RESERVE_BLOCK);
  }

  /**
   * After a commit: reserves the next block in the background once less than half a block is left,
   * a block past the reservation, so that it is written once per block.
   */
  ahead(last: number): void {
    if (this.#writing !== undefined || this.#reserved - last >= RESERVE_BLOCK / 2) return;
    this.#write(Math.max(this.#reserved, last) + RESERVE_BLOCK).catch(this.#report);
  }

  /**
   * At a clean stop, once no create runs, and where there was no reservation yet: `last` is the last
   * id handed out, where the next start goes on. Nothing is written when the file says so already.
   */
  async stop(last: number): Promise<void> {
    while (this.#writing !== undefined) await this.#writing.catch(() => undefined);
    if (this.#stoppedAt === last) return;
    await writeReservation(this.#fs, this.#dir, { reserved: last, stopped: true }, this.#report);
    this.#stoppedAt = last;
  }

  #write(reserved: number): Promise<void> {
    this.#stoppedAt = undefined;
    const writing = writeReservation(this.#fs, this.#dir, { reserved, stopped: false }, this.#report)
      .then(() => {
        this.#reserved = reserved;
      })
      .finally(() => {
        this.#writing = undefined;
      });
    this.#writing = writing;
    return writing;
  }
}
