/**
 * A webhooks.json that a running server can no longer read (cut short, edited by hand): the previous
 * subscriptions stay in force, and the log says so once, in one line naming the file, without a stack.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { test } from 'node:test';
import { Deliveries } from '#dist/webhooks/deliveries.js';
import { FileSource } from '#dist/webhooks/file-source.js';
import { newSubscription, subscriptionFilePath, updateSubscriptionFile } from '#dist/webhooks/subscription-file.js';
import { tempDirFor, waitFor } from './support.js';

// Nothing is delivered here (the store holds no pet): the address is never connected to.
const OPTIONS = { timeoutMs: 1000, retryMaxMs: 1000, allowHttp: true, allowPrivate: true };

const emptyStore = {
  ready: true,
  list: () => ({ pets: [], more: false }),
  get: () => undefined,
  create: () => Promise.reject(new Error('not in these tests')),
  close: async () => {},
};

test('a webhooks.json cut short while the server runs is said once, in one line without a stack; the subscription stays', async (t) => {
  const dataDir = await tempDirFor(t);
  const subscription = newSubscription('http://127.0.0.1:9/hooks', '', undefined);
  await updateSubscriptionFile(subscriptionFilePath(dataDir), () => ({
    subscriptions: [subscription],
    result: undefined,
  }));
  const errors: Array<{ msg: string; error: unknown }> = [];
  const logger = {
    request() {},
    info() {},
    error(msg: string, error?: unknown) {
      errors.push({ msg, error });
    },
  };
  const deliveries = await Deliveries.start(
    emptyStore,
    FileSource.open(dataDir, () => {}),
    OPTIONS,
    logger,
  );
  t.after(() => deliveries.stop());
  await writeFile(subscriptionFilePath(dataDir), '{"format":"petstore-webhooks/1","subscriptions":[{"id"');
  await waitFor(() => errors.length > 0, 5000, 'the unreadable file said');
  await new Promise((resolve) => setTimeout(resolve, 2500)); // two more reads of the file: said once, not each time
  assert.equal(errors.length, 1, JSON.stringify(errors.map((e) => e.msg)));
  const said = errors[0] as { msg: string; error: unknown };
  assert.match(said.msg, /^cannot read the webhook subscriptions again; the previous ones stay in force/);
  assert.equal(typeof said.error, 'string', 'the reason, not an Error whose stack the log would print');
  assert.match(String(said.error), /webhooks\.json is not valid JSON/);
  assert.doesNotMatch(String(said.error), /\n/);
  assert.deepEqual(
    deliveries.stats().map((s) => s.id),
    [subscription.id],
  );
});
