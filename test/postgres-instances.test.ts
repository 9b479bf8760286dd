/** Several instances on one PostgreSQL database: pets, streams and webhooks shared between them (see postgres.test.ts). */
import { withPostgres } from './postgres-support.js';
import { feedTests } from './postgres/feed.js';
import { instanceTests } from './postgres/instances.js';
import { webhookTests } from './postgres/webhooks.js';

withPostgres('with PostgreSQL, several instances', [instanceTests, feedTests, webhookTests]);
