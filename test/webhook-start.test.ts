/**
 * Where a webhook subscription starts, on the file store: a server takes a new subscription up after
 * the pets it holds then, and that start is on disk (webhook-cursors.json, fsync'ed) before anything is
 * delivered to it or the log says it is delivering. A crash after that line skips none of the pets
 * created after it; a start that cannot be stored leaves the subscription waiting, not delivering.
 */
import assert from 'node:assert/strict';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Deliveries } from '#dist/webhooks/deliveries.js';
import { FileSource } from '#dist/webhooks/file-source.js';
import { newSubscription, subscriptionFilePath, updateSubscriptionFile } from '#dist/webhooks/subscription-file.js';
import type { ListPage, ListQuery, Pet } from './package.js';
import { tempDirFor, waitFor } from './support.js';

// Nothing is delivered in these tests (no pet after a start): the address is never connected to.
const OPTIONS = { timeoutMs: 1000, retryMaxMs: 1000, allowHttp: true, allowPrivate: true };
const URL = 'http://127.0.0.1:9/hooks';

/** A store in memory holding pets 1 to `count`, telling no commits (delivery asks it each second). */
function storeOf(count: number) {
  const pets: Pet[] = Array.from({ length: count }, (_, i) => ({ id: i + 1, name: `pet ${i + 1}`, categoryId: 1n }));
  return {
    ready: true,
    list: ({ after, limit }: ListQuery): ListPage => {
      const matching = pets.filter((p) => p.id > after);
      return { pets: matching.slice(0, limit), more: matching.length > limit };
    },
    get: (id: number) => pets.find((p) => p.id === id),
    create: () => Promise.reject(new Error('not in these tests')),
    close: async () => {},
  };
}

/** The cursor webhook-cursors.json holds for `id` right now: its `last`, or undefined (no file, or none for it). */
function cursorOnDisk(dataDir: string, id: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(join(dataDir, 'webhook-cursors.json'), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  return (JSON.parse(text) as { cursors: Record<string, { last: number }> }).cursors[id]?.last;
}

/**
 * A logger that, the moment a subscription is said to be delivering, reads where the file says it stands
 * (synchronously: what a kill -9 right after that line would leave on disk).
 */
function witness(dataDir: string) {
  const delivering: Array<{ subscription: unknown; after: unknown; onDisk: number | undefined }> = [];
  const errors: Array<{ msg: string; fields: Record<string, unknown> | undefined }> = [];
  return {
    delivering,
    errors,
    request() {},
    info(msg: string, fields?: Record<string, unknown>) {
      if (msg !== 'webhook subscription delivering') return;
      const subscription = fields?.subscription;
      delivering.push({ subscription, after: fields?.after, onDisk: cursorOnDisk(dataDir, String(subscription)) });
    },
    error(msg: string, _error?: unknown, fields?: Record<string, unknown>) {
      errors.push({ msg, fields });
    },
  };
}

async function subscribe(dataDir: string): Promise<string> {
  const subscription = newSubscription(URL, '', undefined);
  await updateSubscriptionFile(subscriptionFilePath(dataDir), (all) => ({
    subscriptions: [...all, subscription],
    result: undefined,
  }));
  return subscription.id;
}

test('a subscription is said to be delivering only once where it starts is on disk: at the start, and added later', async (t) => {
  const dataDir = await tempDirFor(t);
  const first = await subscribe(dataDir);
  const logger = witness(dataDir);
  const writeErrors: unknown[] = [];
  const source = FileSource.open(dataDir, (error) => writeErrors.push(error));
  const deliveries = await Deliveries.start(storeOf(3), source, OPTIONS, logger);
  t.after(() => deliveries.stop());
  assert.deepEqual(logger.delivering, [{ subscription: first, after: 3, onDisk: 3 }]);

  const second = await subscribe(dataDir);
  await waitFor(() => logger.delivering.length === 2, 5000, 'the added subscription taken up');
  assert.deepEqual(logger.delivering[1], { subscription: second, after: 3, onDisk: 3 });
  assert.deepEqual(writeErrors, []);
});

test('a start that cannot be stored leaves the subscription waiting, said once; it starts once the file can be written', async (t) => {
  const dataDir = await tempDirFor(t);
  const logger = witness(dataDir);
  const writeErrors: unknown[] = [];
  // Without a subscription file delivery is not started by the service; here it is, on an empty one.
  await writeFile(subscriptionFilePath(dataDir), '{"format":"petstore-webhooks/1","subscriptions":[]}\n', {
    mode: 0o600,
  });
  const deliveries = await Deliveries.start(
    storeOf(2),
    FileSource.open(dataDir, (error) => writeErrors.push(error)),
    OPTIONS,
    logger,
  );
  t.after(() => deliveries.stop());
  // A directory where the cursor file goes: its replacement (a rename over it) fails, every time.
  const cursors = join(dataDir, 'webhook-cursors.json');
  await mkdir(join(cursors, 'in-the-way'), { recursive: true });
  const id = await subscribe(dataDir);
  await waitFor(() => writeErrors.length >= 3, 10_000, 'three writes of its start tried');
  assert.deepEqual(logger.delivering, [], 'not delivering');
  assert.deepEqual(deliveries.stats(), [], 'not measured either: nothing is delivered to it');
  const said = logger.errors.filter((e) => e.msg.startsWith('cannot store where a new webhook subscription starts'));
  assert.equal(said.length, 1, 'said once');
  assert.deepEqual(said[0]?.fields, { subscription: id });

  await rm(cursors, { recursive: true });
  await waitFor(() => logger.delivering.length === 1, 5000, 'taken up once its start is stored');
  assert.deepEqual(logger.delivering, [{ subscription: id, after: 2, onDisk: 2 }]);
  assert.deepEqual(
    deliveries.stats().map((s) => s.id),
    [id],
  );
});
