import assert from 'node:assert/strict';
import type { LookupAddress } from 'node:dns';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { guardedLookup, isForbiddenAddress } from '#dist/webhooks/address-policy.js';
import { tempDir, tempDirFor, waitFor } from './support.js';
import { certificate, needsOpenssl } from './tls-support.js';
import { startReceiver } from './webhook-receiver.js';
import { createPets, subscribe, webhookServer } from './webhook-support.js';

const FORBIDDEN = [
  '127.0.0.1',
  '127.255.0.9',
  '0.0.0.0',
  '10.1.2.3',
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '169.254.169.254',
  '169.254.0.1',
  '100.64.0.1',
  '100.127.255.254',
  '224.0.0.1',
  '255.255.255.255',
  '198.18.0.1',
  '::1',
  '::',
  'fd00::1',
  'fc00::1',
  'fe80::1',
  'ff02::1',
  '::ffff:127.0.0.1',
  '::ffff:7f00:1',
  '::ffff:169.254.169.254',
  // IPv4-translated (SIIT, RFC 2765): a translator delivers it to the IPv4 address inside.
  '::ffff:0:127.0.0.1',
  '::ffff:0:a9fe:a9fe',
  '::ffff:10.0.0.1',
  '::127.0.0.1',
  '2002:7f00:1::1',
  '2002:a9fe:a9fe::',
  '64:ff9b::7f00:1',
  '64:ff9b::a9fe:a9fe',
  '2001:db8::1',
  'not an address',
];
const ALLOWED = [
  '8.8.8.8',
  '1.1.1.1',
  '172.32.0.1',
  '100.128.0.1',
  '169.255.0.1',
  '2606:4700:4700::1111',
  '::ffff:8.8.8.8',
  '2002:808:808::1',
  '64:ff9b::808:808',
];

test('loopback, private, CGNAT, link-local, metadata, unique-local and their IPv4-mapped, 6to4 and NAT64 forms are forbidden', () => {
  for (const address of FORBIDDEN) assert.equal(isForbiddenAddress(address), true, address);
  for (const address of ALLOWED) assert.equal(isForbiddenAddress(address), false, address);
});

/** A resolver that answers `addresses` for every name, as a rebinding DNS server would at the second ask. */
const resolver =
  (addresses: LookupAddress[]) =>
  (_host: string, _options: unknown, callback: (e: null, all: LookupAddress[]) => void): void =>
    callback(null, addresses);

function lookUp(addresses: LookupAddress[], all: boolean): Promise<{ error: Error | null; result: unknown }> {
  return new Promise((resolve) => {
    guardedLookup(resolver(addresses))('hook.example', { all }, (error: Error | null, result: unknown) =>
      resolve({ error, result }),
    );
  });
}

test('the connect-time lookup refuses a name that resolves to a private address, and connects only to the public ones', async () => {
  const rebound = await lookUp([{ address: '169.254.169.254', family: 4 }], false);
  assert.match(
    String(rebound.error?.message),
    /hook\.example resolves to 169\.254\.169\.254, .*--webhooks-allow-private/,
  );
  const mixed = await lookUp(
    [
      { address: '10.0.0.5', family: 4 },
      { address: '93.184.215.14', family: 4 },
    ],
    false,
  );
  assert.deepEqual(mixed, { error: null, result: '93.184.215.14' });
  const all = await lookUp(
    [
      { address: '::ffff:127.0.0.1', family: 6 },
      { address: '2606:4700::1', family: 6 },
    ],
    true,
  );
  assert.deepEqual(all, { error: null, result: [{ address: '2606:4700::1', family: 6 }] });
});

test('without --webhooks-allow-private nothing is sent to a loopback address, given as a literal or as a name', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  await subscribe(dataDir, receiver.url);
  await subscribe(dataDir, `http://localhost:${receiver.port}/by-name`);
  await subscribe(dataDir, `http://[::ffff:127.0.0.1]:${receiver.port}/mapped`);
  const server = await webhookServer(t, {
    dataDir,
    webhooksAllowPrivate: false,
    webhooksRetryMax: 0.05,
    metrics: true,
  });
  await createPets(server, 1);
  const refused = async (): Promise<number> =>
    [...(await server.running.petstore.metrics()).matchAll(/result="refused"\} ([0-9]+)/g)].filter(
      (m) => Number(m[1]) >= 2,
    ).length;
  let count = 0;
  await waitFor(
    () => {
      void refused().then((n) => (count = n));
      return count === 3;
    },
    5000,
    'all three subscriptions refused twice',
  );
  assert.equal(receiver.received.length, 0);
});

test('an http URL is refused at delivery without --webhooks-allow-http, even when the file says it', async (t) => {
  const receiver = await startReceiver(t);
  const dataDir = await tempDir();
  await subscribe(dataDir, receiver.url);
  const server = await webhookServer(t, { dataDir, webhooksAllowHttp: false, webhooksRetryMax: 0.05, metrics: true });
  await createPets(server, 1);
  let metrics = '';
  await waitFor(
    () => {
      void server.running.petstore.metrics().then((m) => (metrics = m));
      return /result="refused"\} [1-9]/.test(metrics);
    },
    5000,
    'refused',
  );
  assert.equal(receiver.received.length, 0);
});

test(
  'a receiver whose certificate does not verify gets nothing: the handshake fails and is retried',
  needsOpenssl,
  async (t) => {
    const dir = await tempDirFor(t);
    const { cert, key } = certificate(dir, 'receiver');
    let requests = 0;
    const receiver = createHttpsServer({ cert: readFileSync(cert), key: readFileSync(key) }, (_req, res) => {
      requests++;
      res.writeHead(204).end();
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    t.after(() => new Promise((r) => receiver.close(r)));
    const dataDir = await tempDir();
    await subscribe(dataDir, `https://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`);
    const server = await webhookServer(t, { dataDir, webhooksAllowHttp: false, webhooksRetryMax: 0.05, metrics: true });
    await createPets(server, 1);
    let metrics = '';
    await waitFor(
      () => {
        void server.running.petstore.metrics().then((m) => (metrics = m));
        return /result="failed"\} [2-9]/.test(metrics);
      },
      5000,
      'two failed attempts',
    );
    assert.equal(requests, 0);
    assert.match(metrics, /result="delivered"\} 0\n/);
  },
);
