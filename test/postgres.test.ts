/**
 * Everything that needs a real PostgreSQL, in one suite on one throwaway cluster (postgres-support.ts),
 * each test on a database of its own. Without PostgreSQL (and without CI=true) the suite is skipped
 * with one line saying how to get it; on CI it is installed and always runs.
 */
import { after, before, describe } from 'node:test';
import { postgresBin, SKIP_REASON, startCluster, type Cluster } from './postgres-support.js';
import { awayLogTests } from './postgres/away-log.js';
import { cliTests } from './postgres/cli.js';
import { commitWatchTests } from './postgres/commit-watch.js';
import { copyTests } from './postgres/copy.js';
import { failoverTests } from './postgres/failover.js';
import { driverInstallTests } from './postgres/driver-install.js';
import { feedTests } from './postgres/feed.js';
import { idempotencyTests } from './postgres/idempotency.js';
import { immutablePetTests } from './postgres/immutable-pets.js';
import { instanceTests } from './postgres/instances.js';
import { metricsTests } from './postgres/metrics.js';
import { nameTests } from './postgres/names.js';
import { notificationTests } from './postgres/notifications.js';
import { orderingTests } from './postgres/ordering.js';
import { scopeTests } from './postgres/scopes.js';
import { storeTests } from './postgres/store.js';
import { webhookTests } from './postgres/webhooks.js';

const bin = postgresBin();

describe('with PostgreSQL', { skip: bin === undefined ? SKIP_REASON : false }, () => {
  let cluster: Cluster | undefined;
  before(async () => {
    cluster = await startCluster(bin as string);
  });
  after(() => cluster?.destroy());
  const context = (): Cluster => {
    if (cluster === undefined) throw new Error('the cluster did not start');
    return cluster;
  };
  storeTests(context);
  cliTests(context);
  idempotencyTests(context);
  instanceTests(context);
  driverInstallTests(context);
  nameTests(context);
  metricsTests(context);
  scopeTests(context);
  orderingTests(context);
  feedTests(context);
  commitWatchTests(context);
  copyTests(context);
  immutablePetTests(context);
  notificationTests(context);
  failoverTests(context);
  webhookTests(context);
  awayLogTests(context);
});
