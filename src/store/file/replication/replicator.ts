import { nodeFileSystem, type FileSystem } from '../../../lib/file-system.js';
import type { ServiceLogger } from '../../../lib/logger.js';
import type { CommitListener, ListPage, ListQuery } from '../../store.js';
import { journalFile } from '../file-names.js';
import { reasonOf, ReplicationError, type Destination, type FailureReason } from './destinations/destination.js';
import { ChangedDuringRead, type DurableJournal } from './durable-files.js';
import { newLineage } from './layout.js';
import { applyRetention } from './retention.js';
import { shipRound, type ShippedState } from './round.js';
import { claimDestination, directoryHome, localRecord, writeLocalRecord, type LocalRecord } from './store-id.js';
import { succession, type Succession } from './succession.js';

/** What replication needs of the file store: its durable journal, and word of each commit. */
export interface ReplicatedStore {
  durableJournal(): DurableJournal;
  /** Holds the snapshot and journals as they are until the release is called (compaction waits). */
  holdFiles(): Promise<() => void>;
  list(query: ListQuery): ListPage;
  watchCommits(listener: CommitListener): () => void;
}

export interface ReplicatorOptions {
  dataDir: string;
  store: ReplicatedStore;
  destination: Destination;
  /** Milliseconds between the end of a round and the start of the next. */
  intervalMs: number;
  logger: ServiceLogger;
  /** The store id of another store whose destination this one may take over. */
  takeOver?: string | undefined;
  /** How far back a restore may reach, in milliseconds (retention.ts). */
  retentionMs: number;
  /** Milliseconds a stop gives the round under way and the last one, in all (default 10 s). */
  stopMs?: number | undefined;
  /** What the store's files are read through (the store's own; default the node one). */
  fileSystem?: FileSystem | undefined;
  /** The time in milliseconds that lag and successes are measured by (default Date.now), so a test can move it. */
  now?: (() => number) | undefined;
}

export interface ReplicationStats {
  /** Seconds since the oldest commit not yet in a written position; 0 when all is shipped. */
  lagSeconds: number;
  /** Bytes of the open journal durable but not yet shipped. */
  lagBytes: number;
  /** When a position was last written, in seconds since the epoch; undefined before the first. */
  lastSuccess: number | undefined;
  failures: ReadonlyMap<FailureReason, number>;
}

// How long a stop gives the round under way and its last round, in all, unless told.
const DEFAULT_STOP_MS = 10_000;
// How often what is past the retention window is removed, at most.
const RETENTION_EVERY_MS = 10 * 60_000;
// Past this many intervals (and 10 s) of lag, replication counts as behind even while rounds succeed.
const BEHIND_INTERVALS = 10;

/**
 * Ships the data directory to the destination every interval, off the request path: the store's only
 * part is one call per commit (the commit listener, which notes the time) and answering
 * durableJournal(). A round that fails is logged once as falling behind and done again next interval;
 * what is unshipped meanwhile stays where it is anyway, in the data directory (see round.ts).
 */
export class Replicator {
  readonly #options: ReplicatorOptions;
  readonly #state: ShippedState;
  readonly #failures = new Map<FailureReason, number>();
  readonly #unwatch: () => void;
  readonly #now: () => number;
  #pendingSince: number | undefined;
  #lastCommitAt = 0;
  #committedId = 0;
  #lastSuccess: number | undefined;
  #behindSince: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #round: Promise<void> | undefined;
  #stopped = false;
  #begun = false;
  /** Whether a round failed (or a crash may have cut one) since the destination was last tidied. */
  #untidy = true;
  #superseded = false;
  #retainedAt = 0;
  /** What the data directory is to record of this lineage before its first round. */
  #record: LocalRecord | undefined;

  private constructor(options: ReplicatorOptions, record: LocalRecord, place: Succession, home: string) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    const lineage = newLineage();
    this.#state = { store: record.store, lineage, ...place, seq: 0, previous: null, files: new Map() };
    this.#record = { store: record.store, lineage, parent: place.parent?.lineage, home };
    this.#pendingSince = this.#now(); // the first round ships everything
    this.#unwatch = options.store.watchCommits((lastId) => {
      this.#committedId = lastId;
      this.#lastCommitAt = this.#now();
      this.#pendingSince ??= this.#lastCommitAt;
    });
  }

  /**
   * Checks that the destination can be used, is this store's and that this directory may continue
   * its newest history (refusing the start otherwise, with what to do), and prepares a new lineage.
   * Nothing of the lineage is written until begin(): a start that fails before it serves leaves none.
   */
  static async start(options: ReplicatorOptions): Promise<Replicator> {
    const record = await localRecord(options.dataDir);
    const tookOver = await claimDestination(options.destination, record.store, options.takeOver);
    const home = await directoryHome(options.dataDir);
    const holds = (id: number): boolean => options.store.list({ after: id - 1, limit: 1 }).pets[0]?.id === id;
    const takingOver = tookOver || options.takeOver === record.store;
    const place = await succession(options.destination, record, home, takingOver, holds);
    return new Replicator(options, record, place, home);
  }

  /** Starts the rounds, once the server serves; the first runs at once. */
  begin(): void {
    if (this.#begun) return;
    this.#begun = true;
    this.#schedule(0);
  }

  get lineage(): string {
    return this.#state.lineage;
  }

  stats(): ReplicationStats {
    const durable = this.#options.store.durableJournal();
    const shipped = this.#state.files.get(journalFile(durable.generation))?.file.length ?? 0;
    return {
      lagSeconds: this.#pendingSince === undefined ? 0 : Math.max(0, this.#now() - this.#pendingSince) / 1000,
      lagBytes: Math.max(0, durable.length - shipped),
      lastSuccess: this.#lastSuccess === undefined ? undefined : this.#lastSuccess / 1000,
      failures: this.#failures,
    };
  }

  /**
   * Stops the rounds: waits for one under way, then ships what is left in one last round, both within
   * `stopMs`; a destination that takes longer (one that trickles) does not hold the stop: the round is
   * abandoned, and the next start's first round ships everything anyway.
   */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    const stopMs = this.#options.stopMs ?? DEFAULT_STOP_MS;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), stopMs)));
    const last = (async (): Promise<void> => {
      await this.#round;
      if (!this.#begun || this.#superseded) return;
      await this.#ship();
    })();
    if ((await Promise.race([last, late])) === 'late') {
      const { logger, destination } = this.#options;
      const message = 'the stop abandoned the replication round under way: the next start ships what it held';
      const fields = { destination: destination.name, stopMs };
      logger.warn(message, fields);
    }
    clearTimeout(timer);
    this.#unwatch();
  }

  #schedule(ms: number): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#round = this.#ship().finally(() => {
        this.#round = undefined;
        this.#schedule(this.#options.intervalMs);
      });
    }, ms);
    this.#timer.unref();
  }

  async #ship(): Promise<void> {
    const began = this.#now();
    // Commits up to here are in the files the round reads; one after it may or may not be.
    const committedBefore = this.#lastCommitAt;
    if (this.#superseded) return this.#count('superseded');
    try {
      // The directory says which lineage it began before the lineage can exist at the destination (succession.ts).
      if (this.#record !== undefined) await writeLocalRecord(this.#options.dataDir, this.#record);
      this.#record = undefined;
      const outcome = await shipRound(
        this.#options.dataDir,
        this.#options.destination,
        this.#state,
        {
          fs: this.#options.fileSystem ?? nodeFileSystem,
          journal: () => this.#options.store.durableJournal(),
          holdFiles: () => this.#options.store.holdFiles(),
        },
        this.#committedId,
      );
      if (outcome.shipped) this.#lastSuccess = this.#now();
      if (this.#now() - this.#retainedAt >= RETENTION_EVERY_MS && this.#lastSuccess !== undefined) {
        this.#retainedAt = this.#now();
        const { destination, retentionMs } = this.#options;
        const removed = await applyRetention(destination, this.#state.store, this.#state.lineage, retentionMs);
        if (removed > 0) this.#untidy = true;
      }
      if (this.#untidy) await this.#options.destination.tidy?.();
      this.#untidy = false;
      if (this.#lastCommitAt === committedBefore) this.#pendingSince = undefined;
      else this.#pendingSince = Math.min(this.#pendingSince ?? began, began);
      this.#checkBehind(undefined);
    } catch (error) {
      // Something outside the store changed a held file under the round: the next round reads again.
      if (error instanceof ChangedDuringRead) return;
      const reason = reasonOf(error);
      this.#count(reason);
      this.#untidy = true;
      if (reason === 'superseded') {
        this.#superseded = true;
        this.#options.logger.error(
          "replication stopped: this server's history has been superseded at its " +
            'destination, so nothing it ships could be restored; restart it from a restore of the newest history, ' +
            'or with --replicate-take-over',
          error,
          { destination: this.#options.destination.name, lineage: this.#state.lineage },
        );
        return;
      }
      this.#checkBehind(
        error instanceof ReplicationError
          ? error
          : new ReplicationError(reason, String(error instanceof Error ? error.message : error)),
      );
    }
  }

  #count(reason: FailureReason): void {
    this.#failures.set(reason, (this.#failures.get(reason) ?? 0) + 1);
  }

  /** One line when replication falls behind (a failed round, or lag past the bound), one when it has caught up. */
  #checkBehind(failure: ReplicationError | undefined): void {
    const { logger, destination, intervalMs } = this.#options;
    const lag = this.stats().lagSeconds;
    const behind = failure !== undefined || lag > Math.max(10, (BEHIND_INTERVALS * intervalMs) / 1000);
    if (behind && this.#behindSince === undefined) {
      this.#behindSince = this.#now();
      const fields = {
        destination: destination.name,
        reason: failure?.reason ?? 'slow',
        error: failure?.message,
        lagSeconds: Math.round(lag * 10) / 10,
      };
      logger.warn(
        'replication is falling behind: what was created since is only on this machine until it catches up',
        fields,
      );
    } else if (!behind && this.#behindSince !== undefined && this.#pendingSince === undefined) {
      logger.info('replication has caught up', {
        destination: destination.name,
        behindSeconds: Math.round((this.#now() - this.#behindSince) / 100) / 10,
      });
      this.#behindSince = undefined;
    }
  }
}
