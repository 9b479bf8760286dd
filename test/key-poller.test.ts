/**
 * KeyPoller keeps a Keyring's shared keys (the database's) in step with their source, once a
 * second. Each change makes the keyring a new generation, which ends every connection's remembered
 * key (http/access/remembered-key.ts): so a read that finds the same keys changes nothing.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { KeyPoller } from '#dist/auth/key-poller.js';
import { Keyring, type KeyRecordDigest } from '#dist/auth/keyring.js';
import { waitFor } from './support.js';

const record = (id: string, key: string): KeyRecordDigest => ({
  id,
  sha256: createHash('sha256').update(key).digest('hex'),
  scopes: null,
});

test("a read finding the same keys leaves the keyring's generation as it is; a changed one makes a new generation at once", {
  timeout: 120_000,
}, async (t) => {
  let keys: KeyRecordDigest[] = [record('a', 'key-a-0123456789abcdef')];
  const keyring = new Keyring({});
  let reads = 0;
  const poller = await KeyPoller.start(
    keyring,
    () => {
      reads++;
      return Promise.resolve(keys.map((k) => ({ ...k }))); // a new array of new records each time, as a query makes
    },
    (error) => assert.fail(String(error)),
  );
  t.after(() => poller.stop());
  const first = keyring.generation;
  assert.ok(keyring.accepts('key-a-0123456789abcdef'));
  await waitFor(() => reads >= 3, 5000, 'read 3');
  assert.equal(keyring.generation, first, 'two more reads of the same keys: the same generation');
  keys = [...keys, record('b', 'key-b-0123456789abcdef')];
  await waitFor(() => reads >= 4, 5000, 'read 4');
  await waitFor(() => keyring.generation > first, 5000, 'a key added: a new generation');
  assert.ok(keyring.accepts('key-b-0123456789abcdef'));
  const second = keyring.generation;
  keys = keys.slice(1);
  await waitFor(() => reads >= 5, 5000, 'read 5');
  await waitFor(() => keyring.generation > second, 5000, 'a key removed: a new generation');
  assert.equal(keyring.accepts('key-a-0123456789abcdef'), false);
});
