/**
 * What needs a real PostgreSQL, on one instance at a time: the store, the CLI on a database, keys and
 * their scopes, idempotency, metrics, ordering of ids, the driver's install. Each file of
 * postgres*.test.ts runs on a throwaway cluster of its own (postgres-support.ts), each test on a
 * database of its own, so that the files run side by side. Without PostgreSQL (and without CI=true)
 * they are skipped with one line saying how to get it; on CI it is installed and they always run.
 */
import { withPostgres } from './postgres-support.js';
import { cliTests } from './postgres/cli.js';
import { driverInstallTests } from './postgres/driver-install.js';
import { idempotencyTests } from './postgres/idempotency.js';
import { immutablePetTests } from './postgres/immutable-pets.js';
import { metricsTests } from './postgres/metrics.js';
import { nameTests } from './postgres/names.js';
import { orderingTests } from './postgres/ordering.js';
import { scopeTests } from './postgres/scopes.js';
import { storeTests } from './postgres/store.js';

withPostgres('with PostgreSQL', [
  storeTests,
  cliTests,
  idempotencyTests,
  driverInstallTests,
  nameTests,
  metricsTests,
  scopeTests,
  orderingTests,
  immutablePetTests,
]);
