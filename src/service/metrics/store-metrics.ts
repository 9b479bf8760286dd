import { CollectedMetric, single } from '../../lib/metrics/collected.js';
import { Counter } from '../../lib/metrics/counter.js';
import type { Sample } from '../../lib/metrics/exposition.js';
import { Histogram } from '../../lib/metrics/histogram.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';
import {
  StoreUnavailableError,
  type PetStore,
  type PoolStats,
  type StatusCounts,
  type StoreObserver,
  type StoreStats,
} from '../../store/store.js';

/** Seconds, from a tenth of a millisecond (an fdatasync on a fast SSD) to 10 s (a disk or database in trouble). */
export const COMMIT_DURATION_BUCKETS = [
  0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
/** How long a scrape waits for a database to count its pets; past it `petstore_pets` has no samples in that scrape. */
export const COUNT_TIMEOUT_MS = 3000;

/**
 * The store's families: readiness always; the rest only for what the store reports (the file store
 * and the PostgreSQL store report all of it; a store of an embedder's own, what it implements).
 */
export function addStoreMetrics(registry: MetricsRegistry, store: PetStore): void {
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_store_ready',
      'Whether the store is open and can take a write (1), as /readyz says; 0 while creates are refused',
      [],
      () => single(store.ready ? 1 : 0),
    ),
  );
  const stats = store.stats?.bind(store);
  if (stats !== undefined) {
    registry.add(
      new CollectedMetric(
        'gauge',
        'petstore_store_creates_waiting',
        'Creates accepted and waiting for the next commit',
        [],
        () => single(stats().createsWaiting),
      ),
    );
  }
  if (stats?.().pool !== undefined) addPoolGauges(registry, stats);
  // After the pool's gauges: the registry reads families in order, and this one's query would count itself in use.
  const countByStatus = store.countByStatus?.bind(store);
  if (countByStatus !== undefined) {
    registry.add(
      new CollectedMetric(
        'gauge',
        'petstore_pets',
        'Pets stored, by status ("none": without one), adding up to all pets stored; no samples while the store ' +
          'cannot count them',
        ['status'],
        async () => perStatus(await countWithin(countByStatus, COUNT_TIMEOUT_MS)),
      ),
    );
  }
  const observe = store.observe?.bind(store);
  if (observe !== undefined) addCommitMetrics(registry, observe);
}

/** The database pool's gauges, read from the store's stats at each scrape. */
function addPoolGauges(registry: MetricsRegistry, stats: () => StoreStats): void {
  const pool = (field: keyof PoolStats) => () => single(stats().pool?.[field] ?? 0);
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_db_pool_size',
      'Database connections at most (--database-pool)',
      [],
      pool('size'),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_db_pool_in_use',
      'Statements of this instance in flight on the database, each holding a connection',
      [],
      pool('inUse'),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_db_pool_waiting',
      "Statements of this instance in flight beyond the pool's size, waiting behind others",
      [],
      pool('waiting'),
    ),
  );
}

/** The commits' histogram and counters, fed by the store as each commit ends. */
function addCommitMetrics(registry: MetricsRegistry, observe: (observer: StoreObserver) => void): void {
  const duration = registry
    .add(
      new Histogram(
        'petstore_store_commit_duration_seconds',
        'Time of each durable commit: the journal append and its fdatasync; on PostgreSQL the statement and its ' +
          'COMMIT, waits for a connection and the id lock included',
        [],
        COMMIT_DURATION_BUCKETS,
      ),
    )
    .labels();
  const commits = registry.add(new Counter('petstore_store_commits_total', 'Durable commits')).labels();
  const creates = registry
    .add(
      new Counter(
        'petstore_store_committed_creates_total',
        'Creates made durable by those commits; divided by the commits, the group-commit batch',
      ),
    )
    .labels();
  const failures = registry
    .add(
      new Counter(
        'petstore_store_commit_failures_total',
        'Commits that failed or were refused while the storage is failing; their creates were answered 503',
      ),
    )
    .labels();
  observe({
    committed(seconds, count) {
      duration.observe(seconds);
      commits.inc();
      creates.inc(count);
    },
    failed() {
      failures.inc();
    },
  });
}

function perStatus(counts: StatusCounts | undefined): Sample[] {
  return counts === undefined ? [] : Object.entries(counts).map(([status, count]) => [[status], count]);
}

/** The counts, or undefined when the store cannot read them now or not within `ms`. */
async function countWithin(
  count: () => StatusCounts | Promise<StatusCounts>,
  ms: number,
): Promise<StatusCounts | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, ms, undefined);
  });
  try {
    // A count that comes late is still handled by the race; only its result is no longer awaited.
    return await Promise.race([count(), late]);
  } catch (error) {
    if (error instanceof StoreUnavailableError) return undefined;
    throw error;
  } finally {
    clearTimeout(timer);
  }
}
