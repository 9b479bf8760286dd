import type { Sql } from 'postgres';
import { StoreUnavailableError } from '../store.js';
import { divergence, readLineage, type Lineage } from './lineage.js';
import { writeLostPets } from './lost-pets.js';
import type { Guard } from './pet-copy.js';

/** A pet as this instance held it. */
interface Mark {
  id: number;
  text: string;
}

/** The database went back: what this instance had seen, and why it knows. */
export interface WentBack {
  reason: string;
  /** The highest id this instance saw committed; the id counter is moved past it. */
  highWater: number;
}

/** Done: the counter is at `highWater` or past it, the copy is read again, and the lost pets are in `file`. */
export interface Recovered {
  highWater: number;
  /** Pets this instance's copy held that the database no longer holds as they were. */
  lost: number;
  /** Where they were written; undefined when none were lost, or without a copy (`lostUnknown`). */
  file: string | undefined;
  /** Without a copy of the pets (`--database-reads on`) the lost pets cannot be listed. */
  lostUnknown: boolean;
  /** The lost pets' texts when the file could not be written (onError was told why): the log keeps them. */
  unwritten: string[] | undefined;
}

export interface RewindOptions {
  sql: Sql;
  /** How the store runs a statement: bounded in time, the database away a StoreUnavailableError. */
  guard: Guard;
  /**
   * Reads the copy again from the database, trying its reads again until done or closed; the pets it held that the
   * database no longer holds as they were.
   */
  refill: (() => Promise<Buffer[]>) | undefined;
  /** A pet's JSON text as the database holds it now. */
  readText(id: number): Promise<string | undefined>;
  /** Where `lost-pets-<time>.jsonl` is written. */
  directory: string;
  onWentBack(event: WentBack): void;
  onRecovered(event: Recovered): void;
  /** A failure that is not the database being away: a step of the recovery refused, the file unwritable. */
  onError(error: unknown): void;
}

/** What a read of the WAL position is compared with when it ends: the highest seen when it began, and since when. */
export interface PositionFloor {
  seen: bigint;
  wentBack: number;
}

/** A step of the recovery that failed with the database away is tried again this often. */
const RETRY_MS = 1000;

/**
 * A database that went back: a failover to a standby that had not received the last commits, or a
 * restored copy. Then ids this instance saw acknowledged are free again in the database, and a create
 * would hand one out a second time, for another pet, under the same ETag. This instance remembers
 * the highest id it saw committed (its own batches, the id counter as read, its copy's newest) and
 * the database's lineage (lineage.ts). A counter below that id, or another lineage, starts a
 * recovery: creates are refused (`recovering`) until the counter is moved past that id, the copy
 * is read again from the database, and the pets the copy held that the database lost are written to
 * `lost-pets-<time>.jsonl` for the operator. Every instance does so for what it saw: the counter
 * ends past every id any running instance saw.
 */
export class Rewind {
  readonly #options: RewindOptions;
  #highWater = 0;
  #lineage: Lineage | undefined;
  /**
   * Pets this instance held when it saw the database away, to be found again afterwards: the first not yet looked
   * for, and the newest since (the copy may have read on in between, from a database not yet checked).
   */
  #marks: Mark[] = [];
  #recovering: Promise<void> | undefined;
  #checking: Promise<void> | undefined;
  /** The highest WAL position the commit watch's reads saw, since the last went back (`#wentBacks` of them). */
  #positionSeen = 0n;
  #wentBacks = 0;
  /** A check was asked for since the running one began: what it came for (new marks, say) is looked at after it. */
  #checkAgain = false;
  #closed = false;

  constructor(options: RewindOptions) {
    this.#options = options;
  }

  /** Creates are refused until the recovery is done. */
  get recovering(): boolean {
    return this.#recovering !== undefined;
  }

  get highWater(): number {
    return this.#highWater;
  }

  /** An id the database said is committed: a batch's last, the copy's newest. */
  saw(id: number): void {
    if (id > this.#highWater) this.#highWater = id;
  }

  /**
   * The id counter as read by a statement that began when `highWater` was `floor`: below it, the
   * database went back. (A commit seen while the read ran may be newer than what the read saw.)
   */
  counter(highest: number, floor: number): void {
    if (highest >= floor) {
      this.saw(highest);
      return;
    }
    this.wentBack(`its id counter is at ${highest}, below id ${floor}, which this instance saw committed`);
  }

  /** Taken when a read of the WAL position begins, for `position` when it ends. */
  positionFloor(): PositionFloor {
    return { seen: this.#positionSeen, wentBack: this.#wentBacks };
  }

  /**
   * The WAL position as read by a statement that began at `floor`: below it, the database went back. A failover to an
   * asynchronous standby keeps the system and, until promoted again, may show no other sign to an instance that saw
   * the database away the whole time (no mark taken) after another instance moved the counter on. A read that began
   * before the last went back is not compared: it saw the database before it.
   */
  position(now: bigint, floor: PositionFloor): void {
    if (floor.wentBack !== this.#wentBacks) return;
    if (now < floor.seen) {
      this.wentBack(`its WAL position went back from ${floor.seen} to ${now} bytes`);
      return;
    }
    if (now > this.#positionSeen) this.#positionSeen = now;
  }

  /**
   * The newest pet held when the database is seen away (restarting, or failing over): once it is
   * back, that pet must be there as it was. Another instance may have moved the id counter past this
   * one's ids already. The first mark not yet looked for is kept beside the newest: a later one alone
   * might be a pet read on top from a database that came back.
   */
  remember(id: number, text: Uint8Array | undefined): void {
    if (text === undefined || this.#recovering !== undefined) return;
    const mark = { id, text: Buffer.from(text).toString() };
    const first = this.#marks[0];
    if (first === undefined) this.#marks = [mark];
    else if (id > (this.#marks.at(-1) as Mark).id) this.#marks = [first, mark];
  }

  /**
   * Each time the database is reachable again, and on each new listening connection: the database's lineage is
   * compared with the one read before, and the remembered pets are looked for. Another system, timeline,
   * an earlier WAL position, or the pet missing or another means the database went back, or may have.
   */
  check(): Promise<void> {
    // One at a time: two reads of the WAL position finishing out of order would look like a step back.
    this.#checkAgain = true;
    this.#checking ??= this.#checkUntilDone().finally(() => (this.#checking = undefined));
    return this.#checking;
  }

  /**
   * Checks until a check asked for has run to its end. One cut short by the database being away (or by a connection
   * its restart left hanging) is tried again every RETRY_MS: nothing else may ask again, and its marks are still to be
   * looked for.
   */
  async #checkUntilDone(): Promise<void> {
    while (this.#checkAgain && !this.#closed) {
      this.#checkAgain = false;
      try {
        await this.#check();
      } catch (error) {
        if (!(error instanceof StoreUnavailableError)) throw error;
        this.#checkAgain = true;
        await new Promise((r) => setTimeout(r, RETRY_MS));
      }
    }
  }

  async #check(): Promise<void> {
    const now = await this.#options.guard(() => readLineage(this.#options.sql));
    const before = this.#lineage;
    const diverged = before === undefined ? undefined : divergence(before, now);
    if (diverged !== undefined) {
      this.wentBack(diverged);
      return;
    }
    const marks = this.#marks;
    const changed = await this.#changedMark(marks);
    // Compared with from now on only once the check ran to its end: one cut short compares with the old one again.
    if (this.#recovering === undefined) this.#lineage = now;
    // Looked for once (kept when a read failed); marks taken meanwhile wait for the next check.
    this.#marks = this.#marks.filter((mark) => !marks.includes(mark));
    if (changed !== undefined) this.wentBack(changed);
  }

  /** Why the first mark not held by the database as it was is not, or undefined when all are. */
  async #changedMark(marks: readonly Mark[]): Promise<string | undefined> {
    for (const mark of marks) {
      const text = await this.#options.guard(() => this.#options.readText(mark.id));
      if (text === mark.text) continue;
      const state = text === undefined ? 'missing' : 'another pet';
      return `pet ${mark.id}, which this instance saw committed, is ${state} in it`;
    }
    return undefined;
  }

  wentBack(reason: string): void {
    if (this.#recovering !== undefined || this.#closed) return;
    // The copy is read again, compared as a whole; the lineage and positions read next are the ones to compare with.
    this.#marks = [];
    this.#lineage = undefined;
    this.#positionSeen = 0n;
    this.#wentBacks++;
    this.#options.onWentBack({ reason, highWater: this.#highWater });
    // A step that failed for another reason ends this recovery: the next create's batch, refused
    // below the seen id (batch.ts), starts another.
    const recovery = this.#recover().catch((error: unknown) => {
      if (!this.#closed) this.#options.onError(error);
    });
    this.#recovering = recovery.finally(() => (this.#recovering = undefined));
  }

  /** Resolves once a recovery under way is over. */
  async settled(): Promise<void> {
    await this.#recovering;
  }

  close(): void {
    this.#closed = true;
  }

  async #recover(): Promise<void> {
    const highWater = this.#highWater;
    const { sql } = this.#options;
    // Past every id this instance saw: none of them is handed out again, by any instance.
    await this.#retried(() => sql`UPDATE petstore.pet_ids SET last_id = greatest(last_id, ${highWater})`.execute());
    // Not under a deadline as a whole: its reads are, and it retries them itself. It may wait behind the copy's other
    // reads; given up and begun again, the second would compare with the first's new copy and find nothing lost.
    const lost = (await this.#options.refill?.()) ?? [];
    if (this.#closed) return;
    let file: string | undefined;
    let unwritten: string[] | undefined;
    if (lost.length > 0) {
      try {
        file = await writeLostPets(this.#options.directory, lost);
      } catch (error) {
        // Nowhere else keeps them: the log line carries them instead.
        this.#options.onError(error);
        unwritten = lost.map(String);
      }
    }
    const lostUnknown = this.#options.refill === undefined;
    this.#options.onRecovered({ highWater, lost: lost.length, file, lostUnknown, unwritten });
  }

  /** `step` until it succeeds; while the database is away it is tried again every RETRY_MS. */
  async #retried<T>(step: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await this.#options.guard(step);
      } catch (error) {
        if (!(error instanceof StoreUnavailableError) || this.#closed) throw error;
      }
      await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}
