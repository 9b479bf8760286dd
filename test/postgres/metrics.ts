/**
 * The metrics of the PostgreSQL store: commits (the statement and its COMMIT) counted and timed, pets
 * per status counted by the database, the pool as this instance uses it, and a scrape that still
 * answers, without the pet counts, while the database is away.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { metricValue } from '../exposition-parser.js';
import { byLabel, metricsServer, scrape } from '../metrics-support.js';
import type { Cluster } from '../postgres-support.js';
import { connect, holdIds } from './store.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

export function metricsTests(cluster: () => Cluster): void {
  test('commits and created pets are counted and timed at the COMMIT, pets per status counted by the database, the pool shown', async (t) => {
    const server = await metricsServer(t, { databaseUrl: await cluster().createDatabase(), databasePool: 4 });
    const create = (status?: string): Promise<number> =>
      server
        .request('POST', '/v1/pets', {
          headers: JSON_HEADERS,
          body: JSON.stringify({ name: 'p', categoryId: 1, ...(status === undefined ? {} : { status }) }),
        })
        .then((r) => r.status);
    for (const status of ['available', 'sold', 'sold', undefined, 'pending']) assert.equal(await create(status), 201);
    let { families } = await scrape(server.metricsUrl);
    assert.equal(metricValue(families, 'petstore_store_commits_total'), 5);
    assert.equal(metricValue(families, 'petstore_store_committed_creates_total'), 5);
    assert.equal(metricValue(families, 'petstore_store_commit_duration_seconds_count'), 5);
    assert.deepEqual(byLabel(families, 'petstore_pets', 'status'), { available: 1, pending: 1, sold: 2, none: 1 });
    assert.equal(metricValue(families, 'petstore_db_pool_size'), 4);
    assert.equal(metricValue(families, 'petstore_store_creates_waiting'), 0);

    const concurrent = await Promise.all(Array.from({ length: 30 }, () => create('sold')));
    assert.ok(concurrent.every((s) => s === 201));
    ({ families } = await scrape(server.metricsUrl));
    const commits = metricValue(families, 'petstore_store_commits_total');
    assert.equal(metricValue(families, 'petstore_store_committed_creates_total'), 35);
    assert.ok(commits > 5 && commits <= 35, `${commits} commits`);
    assert.equal(metricValue(families, 'petstore_store_commit_duration_seconds_count'), commits);
    assert.equal(byLabel(families, 'petstore_pets', 'status').sold, 32);
    assert.equal(metricValue(families, 'petstore_store_commit_failures_total'), 0);
  });

  test('while another instance holds the id row, the commit under way holds a connection and the creates behind it wait', async (t) => {
    const url = await cluster().createDatabase();
    const server = await metricsServer(t, { databaseUrl: url, databasePool: 2 });
    const create = (): Promise<number> =>
      server
        .request('POST', '/v1/pets', { headers: JSON_HEADERS, body: '{"name":"p","categoryId":1}' })
        .then((r) => r.status);
    assert.equal(await create(), 201); // the schema is there
    const held = await holdIds(connect(t, url));
    const first = create();
    let families = (await scrape(server.metricsUrl)).families;
    for (let i = 0; i < 50 && metricValue(families, 'petstore_db_pool_in_use') === 0; i++) {
      await new Promise((r) => setTimeout(r, 20));
      families = (await scrape(server.metricsUrl)).families;
    }
    assert.equal(metricValue(families, 'petstore_db_pool_in_use'), 1, 'the commit statement waits on the id row');
    const behind = [create(), create(), create()];
    for (let i = 0; i < 50 && metricValue(families, 'petstore_store_creates_waiting') < 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      families = (await scrape(server.metricsUrl)).families;
    }
    assert.equal(metricValue(families, 'petstore_store_creates_waiting'), 3);
    await held.release();
    assert.deepEqual(await Promise.all([first, ...behind]), [201, 201, 201, 201]);
    families = (await scrape(server.metricsUrl)).families;
    assert.equal(metricValue(families, 'petstore_store_creates_waiting'), 0);
    assert.equal(metricValue(families, 'petstore_db_pool_in_use'), 0);
    assert.equal(metricValue(families, 'petstore_db_pool_waiting'), 0);
  });

  test('while the database is away a scrape still answers at once: not ready, refusals counted, no pet counts; they come back with it', {
    timeout: 120_000,
  }, async (t) => {
    const server = await metricsServer(t, { databaseUrl: await cluster().createDatabase() });
    assert.equal(
      (
        await server.request('POST', '/v1/pets', {
          headers: JSON_HEADERS,
          body: '{"name":"p","categoryId":1,"status":"sold"}',
        })
      ).status,
      201,
    );
    await cluster().stop();
    try {
      // Lists are answered from the copy in memory; a pet above its newest is asked of the database.
      assert.equal((await server.request('GET', '/v1/pets')).status, 200);
      assert.equal((await server.request('GET', '/v1/pets/2')).status, 503);
      const started = Date.now();
      const { families } = await scrape(server.metricsUrl);
      assert.ok(Date.now() - started < 5000, `the scrape took ${Date.now() - started} ms`);
      assert.equal(metricValue(families, 'petstore_store_ready'), 0);
      assert.deepEqual(families.get('petstore_pets')?.series, [], 'no pet counts while they cannot be read');
      assert.equal(byLabel(families, 'petstore_http_refused_total', 'reason').store_unavailable, 1);
    } finally {
      await cluster().start();
    }
    const deadline = Date.now() + 10_000;
    for (;;) {
      const { families } = await scrape(server.metricsUrl);
      if (metricValue(families, 'petstore_store_ready') === 1 && families.get('petstore_pets')?.series.length === 4) {
        assert.deepEqual(byLabel(families, 'petstore_pets', 'status'), { available: 0, pending: 0, sold: 1, none: 0 });
        break;
      }
      assert.ok(Date.now() < deadline, 'the pets are counted again within 10 s of the database coming back');
      await new Promise((r) => setTimeout(r, 100));
    }
  });
}
