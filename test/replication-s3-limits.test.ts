/**
 * An S3 destination cannot hold the server: every request has a total deadline (a trickle fails it),
 * every answer a bounded size (an endless body fails it), every LIST a bounded number of pages (a
 * repeated token stops it); a stop abandons the round in progress after --shutdown-timeout.
 */
import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import { S3Destination } from '#dist/store/file/replication/destinations/s3-destination.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { AWS_ENV, fakeS3, listAnswer } from './fake-s3.js';
import { TEST_KEY, request, spawnServerFor, waitFor, within } from './support.js';
import { dataDir } from './store-support.js';

/** Answers 200 and then one byte every `everyMs`, never ending, until the connection goes. */
function trickle(res: ServerResponse, everyMs: number): void {
  res.writeHead(200, { 'content-type': 'application/xml' });
  res.write(' ');
  const timer = setInterval(() => res.write(' '), everyMs);
  res.on('close', () => clearInterval(timer));
}

/** Answers 200 with 64 KiB chunks without end, as fast as the client takes them. */
function endless(res: ServerResponse): void {
  const chunk = Buffer.alloc(64 << 10, 0x61);
  res.writeHead(200, { 'content-type': 'application/octet-stream' });
  const more = (): void => {
    while (!res.destroyed && res.write(chunk));
  };
  res.on('drain', more);
  more();
}

const LIMITS = { timeoutMs: 300, minBytesPerSecond: 1 << 20, maxBodyBytes: 64 << 20 };

test('a PUT answered 200 and then a byte every 100 ms fails at its deadline (never idle, never done)', async (t) => {
  const s3 = await fakeS3(t, (_req, res) => trickle(res, 100));
  const location = { bucket: 'replicas', prefix: '', endpoint: new URL(s3.url), region: 'eu-central-1' };
  const destination = new S3Destination(location, { accessKeyId: 'FAKE', secretAccessKey: 'x' }, LIMITS);
  const began = Date.now();
  await within(
    assert.rejects(destination.put('lineages/x/data/1', Buffer.from('x')), {
      reason: 'timeout',
      message: /took longer than 300 ms/,
    }),
    5000,
    'the deadline',
  );
  assert.ok(Date.now() - began < 2000, `${Date.now() - began} ms`);
});

test('an endless GET body is refused past the bound for answers, RSS bounded; so is a declared length past it, unread', async (t) => {
  const s3 = await fakeS3(t, (req, res) => {
    if (req.url?.includes('declared') === true) res.writeHead(200, { 'content-length': String(1 << 30) }).write('x');
    else endless(res);
  });
  const destination = s3.destination();
  const before = process.memoryUsage().rss;
  let most = before;
  const sampler = setInterval(() => (most = Math.max(most, process.memoryUsage().rss)), 10);
  await within(
    assert.rejects(destination.get('store.json'), {
      reason: 'damaged',
      message: /more than the 67108864 bytes expected/,
    }),
    20_000,
    'the bound',
  );
  clearInterval(sampler);
  t.diagnostic(
    `RSS ${Math.round(before / 2 ** 20)} MiB before, at most ${Math.round(most / 2 ** 20)} MiB while the endless body came`,
  );
  assert.ok(most - before < 256 * 2 ** 20, `RSS grew by ${Math.round((most - before) / 2 ** 20)} MiB`);
  await within(
    assert.rejects(destination.get('declared'), { reason: 'damaged', message: /a body of 1073741824 bytes/ }),
    5000,
    'the declared length',
  );
  // An object its position sizes may be bigger than the bound: the size asked for is the bound then.
  const sized = await fakeS3(t, (_req, res) => res.writeHead(200).end(Buffer.alloc(3 << 20)));
  const small = new S3Destination(
    { bucket: 'b', prefix: '', endpoint: new URL(sized.url), region: 'r' },
    { accessKeyId: 'a', secretAccessKey: 's' },
    { ...LIMITS, timeoutMs: 5000, maxBodyBytes: 1 << 20 },
  );
  assert.equal((await small.get('big', 3 << 20))?.length, 3 << 20);
  await assert.rejects(small.get('big'), { reason: 'damaged' });
});

test('a LIST follows IsTruncated page by page; a repeated continuation token, a truncated page without one and too many pages stop it', async (t) => {
  const pages: Record<string, string> = {
    '': listAnswer(['lineages/a/1', 'lineages/a/2'], 'p2'),
    p2: listAnswer(['lineages/b/1'], 'p3'),
    p3: listAnswer(['lineages/c/1']),
    loop: listAnswer(['lineages/d/1'], 'loop'),
    bare: '<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>',
  };
  let counter = 0;
  const s3 = await fakeS3(t, (req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const prefix = url.searchParams.get('prefix') ?? '';
    const token = url.searchParams.get('continuation-token') ?? '';
    if (prefix === 'lineages/') res.writeHead(200).end(pages[token]);
    else if (prefix === 'loop/') res.writeHead(200).end(token === '' ? listAnswer(['loop/1'], 'loop') : pages.loop);
    else if (prefix === 'bare/') res.writeHead(200).end(pages.bare);
    else res.writeHead(200).end(listAnswer([`${prefix}${counter}`], `t${counter++}`));
  });
  const location = { bucket: 'replicas', prefix: '', endpoint: new URL(s3.url), region: 'eu-central-1' };
  const destination = new S3Destination(
    location,
    { accessKeyId: 'FAKE', secretAccessKey: 'x' },
    { ...LIMITS, timeoutMs: 5000 },
    5,
  );
  assert.deepEqual(await destination.list('lineages/'), [
    'lineages/a/1',
    'lineages/a/2',
    'lineages/b/1',
    'lineages/c/1',
  ]);
  await assert.rejects(destination.list('loop/'), { message: /a continuation token it gave before/ });
  await assert.rejects(destination.list('bare/'), { message: /truncated page with no continuation token/ });
  const asked = s3.seen.length;
  await assert.rejects(destination.list('many/'), { message: /ran past 5 pages/ });
  assert.equal(s3.seen.length - asked, 5);
});

test('a replicator whose S3 destination trickles counts a timeout and goes on', async (t) => {
  let done = async (): Promise<void> => {};
  t.after(() => done());
  const s3 = await fakeS3(t, (req, res) => {
    if (req.method === 'PUT' && req.url?.includes('/lineages/') === true) trickle(res, 100);
    else if (req.method === 'GET' && req.url?.includes('list-type') === true) res.writeHead(200).end(listAnswer([]));
    else if (req.method === 'GET') res.writeHead(404).end('<Error><Code>NoSuchKey</Code></Error>');
    else res.writeHead(200).end();
  });
  const root = await dataDir(t);
  const store = await FileStore.open(join(root, 'data'));
  const location = { bucket: 'replicas', prefix: '', endpoint: new URL(s3.url), region: 'eu-central-1' };
  const destination = new S3Destination(location, { accessKeyId: 'FAKE', secretAccessKey: 'x' }, LIMITS);
  const logger = { request() {}, info() {}, error() {}, warn() {} };
  const replicator = await Replicator.start({
    dataDir: join(root, 'data'),
    store,
    destination,
    intervalMs: 50,
    logger,
    retentionMs: 86_400_000,
  });
  replicator.begin();
  done = async () => {
    await replicator.stop();
    await store.close();
  };
  await store.create({ name: 'pet', categoryId: '1' } as never);
  await waitFor(
    () => (replicator.stats().failures.get('timeout') ?? 0) >= 2,
    10_000,
    'two rounds failed by the deadline',
  );
});

test('SIGTERM while an S3 destination trickles: the stop abandons the round after --shutdown-timeout and the process exits 0', async (t) => {
  const s3 = await fakeS3(t, (req, res) => {
    if (req.method === 'PUT' && req.url?.includes('/data/') === true) trickle(res, 500);
    else if (req.method === 'GET' && req.url?.includes('list-type') === true) res.writeHead(200).end(listAnswer([]));
    else if (req.method === 'GET') res.writeHead(404).end('<Error><Code>NoSuchKey</Code></Error>');
    else res.writeHead(200).end();
  });
  const root = await dataDir(t);
  const server = await spawnServerFor(
    t,
    [
      '--data-dir',
      join(root, 'data'),
      '--replicate-to',
      's3://replicas/x',
      '--replicate-interval',
      '0.05',
      '--shutdown-timeout',
      '1000',
    ],
    {
      PETSTORE_API_KEYS: TEST_KEY,
      AWS_ENDPOINT_URL: s3.url,
      ...AWS_ENV,
    },
  );
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: JSON.stringify({ name: 'pet', categoryId: 1 }),
  });
  assert.equal(created.status, 201);
  await waitFor(
    () => s3.seen.some((line) => line.startsWith('PUT') && line.includes('/data/')),
    5000,
    'an upload under way',
  );
  const began = Date.now();
  server.child.kill('SIGTERM');
  const code = await within(server.exited, 8000, 'the exit after SIGTERM');
  const tookMs = Date.now() - began;
  t.diagnostic(`SIGTERM to exit: ${tookMs} ms with --shutdown-timeout 1000`);
  assert.equal(code, 0, server.stderr());
  assert.ok(tookMs < 2500, `${tookMs} ms`);
  assert.match(server.stdout() + server.stderr(), /the stop abandoned the replication round under way/);
});
