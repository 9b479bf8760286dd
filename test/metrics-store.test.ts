/**
 * What the store, the process and an embedder's service tell in the metrics: pets per status, the
 * durable commits and their failures, true process figures, one registry per service.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { MetricsRegistry } from '#dist/lib/metrics/registry.js';
import { ProcessMetrics } from '#dist/service/metrics/process-metrics.js';
import { FileStore } from '#dist/store/file/file-store.js';
import { parseExposition, metricValue } from './exposition-parser.js';
import { request, startServer, TEST_KEY, tempDir, tempDirFor, type TestServer } from './support.js';
import { byLabel, metricsServer, requestCounts, scrape } from './metrics-support.js';
import { TestFileSystem, isJournalPath } from './store-support.js';
import { createPetstore, StoreUnavailableError, type PetStore } from './package.js';

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];
const body = (name: string, status?: string): string =>
  JSON.stringify({ name, categoryId: 1, ...(status === undefined ? {} : { status }) });

test('petstore_pets counts the pets per status, adding up to all of them, also after a restart reads them back', async (t) => {
  const statuses = ['available', 'available', 'pending', 'sold', 'sold', 'sold', undefined, undefined];
  const dataDir = await tempDir();
  const servers: TestServer[] = [];
  // One hook, in this order: the servers stop (the store writes its last snapshot), then the directory goes.
  t.after(async () => {
    for (const server of servers) await server.stop();
    await rm(dataDir, { recursive: true, force: true });
  });
  const serve = async (): Promise<string> => {
    servers.push(await startServer({ metricsPort: 0, dataDir }));
    return (servers.at(-1) as TestServer).running.metricsUrl as string;
  };
  const before = await serve();
  for (const status of statuses)
    assert.equal(
      (await (servers[0] as TestServer).request('POST', '/v1/pets', { body: body('p', status), headers: [JSON_TYPE] }))
        .status,
      201,
    );
  const expected = { available: 2, pending: 1, sold: 3, none: 2 };
  assert.deepEqual(byLabel((await scrape(before)).families, 'petstore_pets', 'status'), expected);
  await (servers[0] as TestServer).stop();
  const { families } = await scrape(await serve());
  assert.deepEqual(byLabel(families, 'petstore_pets', 'status'), expected);
  assert.equal(metricValue(families, 'petstore_store_commits_total'), 0, 'a new process counts from zero');
});

test('concurrent creates are committed in groups: the created count is exact and each commit is timed once', async (t) => {
  const server = await metricsServer(t);
  const creates = 40;
  const answers = await Promise.all(
    Array.from({ length: creates }, (_, i) =>
      server.request('POST', '/v1/pets', { body: body(`p${i}`), headers: [JSON_TYPE] }),
    ),
  );
  assert.ok(answers.every((a) => a.status === 201));
  const { families } = await scrape(server.metricsUrl);
  const commits = metricValue(families, 'petstore_store_commits_total');
  assert.equal(metricValue(families, 'petstore_store_committed_creates_total'), creates);
  assert.ok(commits >= 1 && commits <= creates, `${commits} commits`);
  assert.equal(metricValue(families, 'petstore_store_commit_duration_seconds_count'), commits);
  assert.ok(metricValue(families, 'petstore_store_commit_duration_seconds_sum') > 0);
  assert.equal(metricValue(families, 'petstore_store_creates_waiting'), 0);
});

test('a failing disk shows as failed commits, refused creates and a store that is not ready, and its recovery as a commit again', async (t) => {
  const dataDir = await tempDir(); // removed by the server's close, after the store's
  const fs = new TestFileSystem();
  let failing = false;
  fs.hook = (call) => (failing && call.op === 'datasync' && isJournalPath(call.path) ? { code: 'EIO' } : undefined);
  const store = await FileStore.open(dataDir, { fileSystem: fs });
  const server = await metricsServer(t, { dataDir, store });
  const create = (): Promise<number> =>
    server.request('POST', '/v1/pets', { body: body('p'), headers: [JSON_TYPE] }).then((r) => r.status);
  assert.equal(await create(), 201);
  failing = true;
  assert.equal(await create(), 503);
  assert.equal(await create(), 503, 'refused at once while the journal is failed');
  let { families } = await scrape(server.metricsUrl);
  assert.equal(metricValue(families, 'petstore_store_ready'), 0);
  assert.equal(metricValue(families, 'petstore_store_commit_failures_total'), 2);
  assert.equal(metricValue(families, 'petstore_store_commits_total'), 1);
  assert.deepEqual(byLabel(families, 'petstore_http_refused_total', 'reason').store_unavailable, 2);
  failing = false;
  assert.equal(await create(), 201);
  ({ families } = await scrape(server.metricsUrl));
  assert.equal(metricValue(families, 'petstore_store_ready'), 1);
  assert.equal(metricValue(families, 'petstore_store_commits_total'), 2);
  assert.equal(
    metricValue(families, 'petstore_store_commit_duration_seconds_count'),
    2,
    'only durable commits are timed',
  );
});

test("process and Node figures are the process's own, read when scraped", async (t) => {
  const server = await metricsServer(t); // in this process, so its /proc is ours
  const cpuBefore = process.cpuUsage();
  const { families } = await scrape(server.metricsUrl);
  const cpuAfter = process.cpuUsage();
  const cpu = metricValue(families, 'process_cpu_seconds_total');
  assert.ok(
    cpu >= (cpuBefore.user + cpuBefore.system) / 1e6 && cpu <= (cpuAfter.user + cpuAfter.system) / 1e6,
    `cpu ${cpu}`,
  );
  assert.ok(
    Math.abs(
      metricValue(families, 'process_cpu_user_seconds_total') +
        metricValue(families, 'process_cpu_system_seconds_total') -
        cpu,
    ) < 0.05,
  );
  assert.ok(Math.abs(metricValue(families, 'process_start_time_seconds') - (Date.now() / 1000 - process.uptime())) < 1);
  const status = readFileSync('/proc/self/status', 'utf8');
  const kb = (field: string): number => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1]) * 1024;
  const near = (value: number, expected: number, slack: number, what: string): void =>
    assert.ok(Math.abs(value - expected) <= slack, `${what}: ${value}, expected about ${expected}`);
  near(metricValue(families, 'process_resident_memory_bytes'), kb('VmRSS'), 32 * 2 ** 20, 'rss');
  near(metricValue(families, 'process_virtual_memory_bytes'), kb('VmSize'), 256 * 2 ** 20, 'virtual');
  near(metricValue(families, 'process_open_fds'), readdirSync('/proc/self/fd').length - 1, 8, 'open fds');
  const soft = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1];
  assert.equal(metricValue(families, 'process_max_fds'), Number(soft));
  const memory = process.memoryUsage();
  near(metricValue(families, 'nodejs_heap_size_total_bytes'), memory.heapTotal, 64 * 2 ** 20, 'heap total');
  assert.ok(
    metricValue(families, 'nodejs_heap_size_used_bytes') <= metricValue(families, 'nodejs_heap_size_total_bytes'),
  );
  assert.ok(metricValue(families, 'nodejs_external_memory_bytes') > 0);
  const [major, minor, patch] = process.versions.node.split('.');
  assert.equal(
    metricValue(families, 'nodejs_version_info', {
      version: process.version,
      major: major ?? '',
      minor: minor ?? '',
      patch: patch ?? '',
    }),
    1,
  );
});

test("the event loop's delay shows a blocked loop in the next scrape, and is back near zero in the one after", async (t) => {
  const server = await metricsServer(t);
  await new Promise((r) => setTimeout(r, 50)); // let the monitor take samples
  await scrape(server.metricsUrl); // starts a new interval
  // The monitor's first sample after the start of an interval only sets where it measures from.
  await new Promise((r) => setTimeout(r, 30));
  const until = Date.now() + 80;
  while (Date.now() < until); // block the loop for 80 ms
  await new Promise((r) => setTimeout(r, 50));
  let { families } = await scrape(server.metricsUrl);
  const max = metricValue(families, 'nodejs_eventloop_lag_max_seconds');
  assert.ok(max >= 0.06 && max < 5, `max delay ${max} s after an 80 ms block`);
  assert.ok(
    metricValue(families, 'nodejs_eventloop_lag_min_seconds') <=
      metricValue(families, 'nodejs_eventloop_lag_p50_seconds'),
  );
  assert.ok(
    metricValue(families, 'nodejs_eventloop_lag_p50_seconds') <=
      metricValue(families, 'nodejs_eventloop_lag_p99_seconds'),
  );
  // The monitor's own 10 ms between samples is no delay: an idle loop is near zero (prom-client would say 0.010).
  // Other processes on a busy machine delay this one too: one interval in 20 has to be idle.
  const idle: string[] = [];
  for (let round = 0; round < 20; round++) {
    await new Promise((r) => setTimeout(r, 100));
    ({ families } = await scrape(server.metricsUrl));
    const [latest, p50] = ['max', 'p50'].map((n) => metricValue(families, `nodejs_eventloop_lag_${n}_seconds`));
    idle.push(`max ${latest} s, p50 ${p50} s`);
    if ((latest as number) < max && (p50 as number) < 0.008) break;
  }
  const [latest, p50] = ['max', 'p50'].map((n) => metricValue(families, `nodejs_eventloop_lag_${n}_seconds`));
  assert.ok((latest as number) < max, `each scrape reports the interval since the one before: ${idle.join('; ')}`);
  assert.ok((p50 as number) < 0.008, `p50 while idle: ${idle.join('; ')}`);
});

test('an embedder gets the same text from service.metrics(), counted apart from any other service in the process; without metrics: true it is refused', async (t) => {
  const [one, two] = await Promise.all(
    [1, 2].map(async () =>
      createPetstore({
        dataDir: await tempDirFor(t),
        keys: [TEST_KEY],
        metrics: true,
        logger: { request() {}, info() {}, error() {} },
      }),
    ),
  );
  const plain = await createPetstore({
    dataDir: await tempDirFor(t),
    keys: [TEST_KEY],
    logger: { request() {}, info() {}, error() {} },
  });
  t.after(() => Promise.all([one?.close(), two?.close(), plain.close()]));
  const http = createServer((req, res) => (one as typeof plain).handler(req, res));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  t.after(() => new Promise((resolve) => http.close(resolve)));
  const url = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  for (let i = 0; i < 3; i++) assert.equal((await request(url, 'GET', '/v1/pets')).status, 200);
  const { parseExposition } = await import('./exposition-parser.js');
  const counted = requestCounts(parseExposition(await (one as typeof plain).metrics()));
  assert.deepEqual(counted, { 'GET /v1/pets 200': 3 });
  assert.deepEqual(requestCounts(parseExposition(await (two as typeof plain).metrics())), {});
  await assert.rejects(plain.metrics(), TypeError);
});

test("a store of the embedder's own: readiness is there, what it does not report is left out, a store that cannot write is counted as refusals", async (t) => {
  const store: PetStore = {
    ready: false,
    list: () => ({ pets: [], more: false }),
    get: () => undefined,
    create: () => Promise.reject(new StoreUnavailableError('no disk')),
    close: async () => {},
  };
  const server = await startServer({ store, metrics: true });
  t.after(() => server.close());
  assert.equal(server.running.metricsUrl, undefined, 'metrics: true alone opens no listener');
  assert.equal((await server.request('POST', '/v1/pets', { body: body('p'), headers: [JSON_TYPE] })).status, 503);
  const { parseExposition } = await import('./exposition-parser.js');
  const families = parseExposition(await server.running.petstore.metrics());
  assert.equal(metricValue(families, 'petstore_store_ready'), 0);
  assert.equal(byLabel(families, 'petstore_http_refused_total', 'reason').store_unavailable, 1);
  for (const absent of [
    'petstore_pets',
    'petstore_store_commits_total',
    'petstore_store_creates_waiting',
    'petstore_db_pool_size',
  ])
    assert.ok(!families.has(absent), absent);
});

test("process_open_fds counts the process's descriptors, not the files the scrape itself opens", {
  skip: process.platform === 'linux' ? false : 'reads /proc',
}, async (t) => {
  const registry = new MetricsRegistry();
  const metrics = new ProcessMetrics(registry);
  t.after(() => metrics.close());
  for (let round = 0; round < 5; round++) {
    // Nothing else of this test is open meanwhile: the listing's own descriptor is the one not counted.
    const open = readdirSync('/proc/self/fd').length - 1;
    assert.equal(metricValue(parseExposition(await registry.expose()), 'process_open_fds'), open);
  }
});
