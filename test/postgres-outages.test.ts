/**
 * A PostgreSQL that goes away, comes back, or comes back older (a failover): the copy, the commit
 * watch, notifications and the log while it is away (see postgres.test.ts). These stop and start the
 * cluster, which is this file's own.
 */
import { withPostgres } from './postgres-support.js';
import { awayLogTests } from './postgres/away-log.js';
import { commitWatchTests } from './postgres/commit-watch.js';
import { copyTests } from './postgres/copy.js';
import { failoverTests } from './postgres/failover.js';
import { notificationTests } from './postgres/notifications.js';

withPostgres('with PostgreSQL, away and back', [
  commitWatchTests,
  copyTests,
  notificationTests,
  failoverTests,
  awayLogTests,
]);
