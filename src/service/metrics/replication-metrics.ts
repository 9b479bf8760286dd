import { CollectedMetric, single } from '../../lib/metrics/collected.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';
import type { Replicator } from '../../store/file/replication/replicator.js';

/** The replication families: lag in seconds and bytes, the last position written, failed rounds by reason. */
export function addReplicationMetrics(registry: MetricsRegistry, replicator: Replicator): void {
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_replication_lag_seconds',
      'Age of the oldest commit not yet in a replicated position; 0 when everything durable is replicated',
      [],
      () => single(replicator.stats().lagSeconds),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_replication_lag_bytes',
      'Bytes of the open journal that are durable but not yet replicated',
      [],
      () => single(replicator.stats().lagBytes),
    ),
  );
  registry.add(
    new CollectedMetric(
      'gauge',
      'petstore_replication_last_success_timestamp_seconds',
      'When a replicated position was last written (Unix time); no sample before the first',
      [],
      () => {
        const last = replicator.stats().lastSuccess;
        return last === undefined ? [] : single(last);
      },
    ),
  );
  registry.add(
    new CollectedMetric(
      'counter',
      'petstore_replication_failures_total',
      'Replication rounds that failed, by reason (timeout, busy, refused, full, unreachable, not_found, damaged, ' +
        'superseded, other)',
      ['reason'],
      () => [...replicator.stats().failures].map(([reason, count]) => [[reason], count]),
    ),
  );
}
