import assert from 'node:assert/strict';
import { test } from 'node:test';
import { tempDir, waitFor, within } from './support.js';
import type { Logger } from './package.js';
import { startReceiver } from './webhook-receiver.js';
import { createPets, subscribe, webhookServer, webhooksHere } from './webhook-support.js';

/** A logger that keeps the messages of its info and error lines. */
function recordingLogger(): Logger & { lines: string[] } {
  const lines: string[] = [];
  return { lines, request() {}, info: (msg) => void lines.push(msg), error: (msg) => void lines.push(msg) };
}

test('every new pet is delivered once, in id order, signed, with the pet exactly as GET returns it', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  const { id, secret } = await subscribe(dataDir, receiver.url);
  receiver.secrets = [secret];
  const server = await webhookServer(t, { dataDir });
  const ids = await createPets(server, 5);
  await waitFor(() => receiver.accepted.length >= 5, 10_000, 'five deliveries');
  assert.deepEqual(
    receiver.received.map((d) => d.petId),
    ids,
  );
  assert.equal(receiver.unverified, 0);
  for (const delivery of receiver.received) {
    const get = await server.request('GET', `/v1/pets/${delivery.petId}`);
    const body = JSON.parse(delivery.body) as { type: string; timestamp: string };
    assert.equal(body.type, 'pet.created');
    assert.equal(delivery.body, `{"type":"pet.created","timestamp":"${body.timestamp}","data":${get.text}}`);
    assert.equal(delivery.id, `msg_${id}_${delivery.petId}`);
    assert.ok(Math.abs(Number(delivery.timestamp) - Date.now() / 1000) < 60, delivery.timestamp);
    assert.equal(new Date(body.timestamp).getTime(), Number(delivery.timestamp) * 1000);
  }
});

test('a subscription added while the server runs is taken up within a second or so, without a restart', async (t) => {
  const receiver = await startReceiver(t);
  const server = await webhookServer(t);
  await createPets(server, 2);
  const { secret } = await subscribe(server.dataDir, receiver.url);
  receiver.secrets = [secret];
  const created: number[] = [];
  const deadline = Date.now() + 5000;
  while (receiver.accepted.length === 0 && Date.now() < deadline) {
    created.push(...(await createPets(server, 1)));
    await new Promise((r) => setTimeout(r, 100));
  }
  await waitFor(
    () => receiver.accepted.length > 0 && receiver.accepted.at(-1)?.petId === created.at(-1),
    5000,
    'the last pet delivered',
  );
  const delivered = receiver.accepted.map((d) => d.petId);
  // From the pet the server took it up at on, every pet, in order; none of those before it was added.
  assert.deepEqual(delivered, created.slice(created.indexOf(delivered[0] as number)));
  assert.equal(receiver.unverified, 0);
});

test('a receiver that is down, then up, gets every pet, in order, from where it stopped', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  const { secret } = await subscribe(dataDir, receiver.url);
  receiver.secrets = [secret];
  const logger = recordingLogger();
  const server = await webhookServer(t, { dataDir, webhooksRetryMax: 0.05, logger, metrics: true });
  const first = await createPets(server, 2);
  await waitFor(() => receiver.accepted.length === 2, 5000, 'two deliveries');
  await receiver.close();
  const later = await createPets(server, 4);
  // Connection refused, over and over: the bound is passed and the subscription is marked failing, once.
  await waitFor(() => logger.lines.includes('webhook subscription failing; retrying'), 10_000, 'marked failing');
  assert.match(
    await server.running.petstore.metrics(),
    /petstore_webhook_failing\{subscription="wh_[0-9a-f]{8}"\} 1\n/,
  );
  assert.match(
    await server.running.petstore.metrics(),
    /petstore_webhook_lag_seconds\{subscription="wh_[0-9a-f]{8}"\} [0-9.e-]+\n/,
  );
  await receiver.reopen();
  await waitFor(() => receiver.accepted.length === 6, 10_000, 'every pet delivered');
  assert.deepEqual(
    receiver.accepted.map((d) => d.petId),
    [...first, ...later],
  );
  assert.equal(logger.lines.filter((l) => l === 'webhook subscription failing; retrying').length, 1);
  assert.equal(logger.lines.filter((l) => l === 'webhook subscription recovered').length, 1);
  // The receiver counts a delivery as it answers; the server, once the answer has come.
  let metrics = '';
  await waitFor(
    () => {
      void server.running.petstore.metrics().then((m) => (metrics = m));
      return /result="delivered"\} 6\n/.test(metrics);
    },
    5000,
    'six deliveries counted',
  );
  assert.match(metrics, /petstore_webhook_failing\{subscription="wh_[0-9a-f]{8}"\} 0\n/);
  assert.match(metrics, /petstore_webhook_deliveries_total\{subscription="wh_[0-9a-f]{8}",result="delivered"\} 6\n/);
  assert.match(
    metrics,
    /petstore_webhook_deliveries_total\{subscription="wh_[0-9a-f]{8}",result="failed"\} ([1-9][0-9]+)\n/,
  );
  assert.match(metrics, /petstore_webhook_lag_seconds\{subscription="wh_[0-9a-f]{8}"\} 0\n/);
});

test('answers other than 2xx are retried with the same webhook-id; a redirect is not followed', async (t) => {
  const elsewhere = await startReceiver(t);
  let answers = 0;
  const receiver = await startReceiver(t, (_req, res) => {
    answers++;
    if (answers === 1) return void res.writeHead(500).end();
    if (answers === 2) return void res.writeHead(307, { location: elsewhere.url }).end();
    receiver.accepted.push(receiver.received.at(-1) as never);
    res.writeHead(204).end();
  });
  const dataDir = await tempDir();
  receiver.secrets = [(await subscribe(dataDir, receiver.url)).secret];
  const server = await webhookServer(t, { dataDir, webhooksRetryMax: 0.05 });
  const [pet] = await createPets(server, 1);
  await waitFor(() => receiver.accepted.length === 1, 5000, 'delivered on the third attempt');
  assert.deepEqual(
    receiver.received.map((d) => d.petId),
    [pet, pet, pet],
  );
  assert.equal(new Set(receiver.received.map((d) => d.id)).size, 1);
  assert.equal(elsewhere.received.length, 0);
});

test('a receiver that never answers, or answers without end, holds neither the deliveries nor the stop', async (t) => {
  const endless = await startReceiver(t, (_req, res) => {
    res.writeHead(200);
    const timer = setInterval(() => res.write('x'.repeat(64 * 1024)), 5);
    res.on('close', () => clearInterval(timer));
  });
  const hanging = await startReceiver(t, 'hang');
  const dataDir = await tempDir();
  endless.secrets = [(await subscribe(dataDir, endless.url)).secret];
  await subscribe(dataDir, hanging.url);
  const server = await webhookServer(t, { dataDir, webhooksTimeout: 60, shutdownTimeout: 60_000 });
  await createPets(server, 3);
  // Judged on the status line: the endless body is never read, and the next pet follows.
  await waitFor(() => endless.received.length === 3, 5000, 'three deliveries despite endless bodies');
  await waitFor(() => hanging.received.length === 1, 5000, 'the hanging receiver has its request');
  const began = Date.now();
  await within(server.stop(), 2000, 'the stop');
  assert.ok(Date.now() - began < 2000);
});

test('a delivery that takes longer than --webhooks-timeout is retried', async (t) => {
  const receiver = await startReceiver(t, 'hang');
  const dataDir = await tempDir();
  await subscribe(dataDir, receiver.url);
  const server = await webhookServer(t, { dataDir, webhooksTimeout: 0.2, webhooksRetryMax: 0.05, metrics: true });
  await createPets(server, 1);
  await waitFor(() => receiver.received.length >= 3, 5000, 'three attempts of one pet');
  assert.match(await server.running.petstore.metrics(), /result="timeout"\} [2-9]/);
});

test('a rotated secret signs beside the new one; replay delivers again from the pet given, same webhook-ids', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  const { id, secret } = await subscribe(dataDir, receiver.url);
  receiver.secrets = [secret];
  const server = await webhookServer(t, { dataDir });
  await createPets(server, 3);
  await waitFor(() => receiver.accepted.length === 3, 5000, 'three deliveries');
  const rotated = await webhooksHere(dataDir, ['rotate-secret', id]);
  const match = /also signs until (\S+); .*\n(whsec_[A-Za-z0-9+/]{43}=)\n$/.exec(rotated);
  assert.ok(match !== null, rotated);
  assert.ok(Math.abs(Date.parse(match[1] as string) - Date.now() - 86_400_000) < 60_000, 'a day of overlap');
  receiver.secrets = [secret, match[2] as string];
  await webhooksHere(dataDir, ['replay', id], { from: '2' });
  await waitFor(() => receiver.accepted.length === 5, 5000, 'pets 2 and 3 again');
  const again = receiver.accepted.slice(3);
  assert.deepEqual(
    again.map((d) => d.petId),
    [2, 3],
  );
  assert.deepEqual(
    again.map((d) => d.id),
    receiver.accepted.slice(1, 3).map((d) => d.id),
  );
  // Whichever secret the receiver knows, a delivery made after the rotation verifies with it.
  for (const d of again) assert.deepEqual([d.signatures, d.verifiedWith], [2, [0, 1]]);
  assert.equal(receiver.unverified, 0);
  // A replay from a pet after where it stands passes nothing over: the next pet still comes.
  await webhooksHere(dataDir, ['replay', id], { from: '9' });
  const [fourth] = await createPets(server, 1);
  await waitFor(() => receiver.accepted.length === 6, 5000, 'the fourth pet');
  assert.equal(receiver.accepted.at(-1)?.petId, fourth);
});

test('a subscription of some statuses gets only their pets; a removed one gets nothing more', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  const { id } = await subscribe(dataDir, receiver.url, ['sold,pending']);
  const server = await webhookServer(t, { dataDir });
  const [sold] = await createPets(server, 1, 'sold');
  await createPets(server, 1, 'available');
  const [pending] = await createPets(server, 1, 'pending');
  await waitFor(() => receiver.accepted.length === 2, 5000, 'two deliveries');
  assert.deepEqual(
    receiver.accepted.map((d) => d.petId),
    [sold, pending],
  );
  await webhooksHere(dataDir, ['remove', id]);
  const marker = await startReceiver(t);
  await subscribe(dataDir, marker.url);
  // Once the later subscription is taken up, the removal (an earlier change of the same file) is too.
  const deadline = Date.now() + 5000;
  while (marker.accepted.length === 0 && Date.now() < deadline) {
    await createPets(server, 1, 'sold');
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(marker.accepted.length > 0);
  // Pets created before the server took the change up still went to it; none from then on.
  const takenUp = marker.accepted[0]?.petId as number;
  assert.deepEqual(
    receiver.received.filter((d) => d.petId >= takenUp),
    [],
  );
});
