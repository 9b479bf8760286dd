/**
 * Connection slots (--max-connections, and the metrics listener's 32): connections that have not
 * brought a request cannot crowd out those that have. At the limit the oldest connection without a
 * request is closed for the new one; a connection that has brought one is never closed for room.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { readFile } from 'node:fs/promises';
import { connect as tlsConnect } from 'node:tls';
import { request, startServer, tempDirFor, TEST_KEY, waitFor, type TestServer } from './support.js';
import { certificate, needsOpenssl } from './tls-support.js';
import { metricsServer, scrape } from './metrics-support.js';
import { metricValue } from './exposition-parser.js';

const PET = '{"name":"Rex","categoryId":1,"status":"available"}';
/** A keyed create's head: the request is in progress until its body comes (POST_BODY). */
const POST_HEAD = `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: ${PET.length}\r\n\r\n`;
const POST_BODY = PET;

/** A client connection: what it received, and whether the server closed it. */
class Peer {
  readonly socket: Socket;
  data = '';
  closed = false;
  readonly opened: Promise<void>;

  constructor(url: string, localAddress = '127.0.0.1') {
    const { hostname, port } = new URL(url);
    this.socket = connect({ port: Number(port), host: hostname, localAddress });
    this.socket.on('data', (chunk: Buffer) => (this.data += chunk.toString('latin1')));
    this.socket.on('error', () => {}); // a reset is a close
    this.socket.once('close', () => (this.closed = true));
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
  }

  /** Sends a complete GET and waits for its answer's head; the connection stays open (keep-alive). */
  async get(path: string, ms = 5000): Promise<number> {
    const before = this.data.length;
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: a\r\n\r\n`);
    await waitFor(() => this.closed || /\r\n\r\n/.test(this.data.slice(before)), ms, `an answer to GET ${path}`);
    return Number(/^HTTP\/1\.1 (\d{3}) /.exec(this.data.slice(before))?.[1] ?? 0);
  }
}

/** How many request heads the server has parsed (its 'request' event): from then on their connections are busy. */
function parsedHeads(server: TestServer): () => number {
  let parsed = 0;
  server.running.server.on('request', () => parsed++);
  return () => parsed;
}

/** Opens `count` connections and waits until the server holds `total` in all. */
async function open(
  server: { url: string; running: TestServer['running'] } | string,
  count: number,
  holds?: () => Promise<number>,
  total?: number,
): Promise<Peer[]> {
  const url = typeof server === 'string' ? server : server.url;
  const peers: Peer[] = [];
  for (let i = 0; i < count; i++) {
    const peer = new Peer(url);
    await peer.opened;
    peers.push(peer);
  }
  if (holds !== undefined && total !== undefined) {
    await waitFor(async () => (await holds()) === total, 5000, 'the server has accepted them');
  }
  return peers;
}

function held(server: TestServer): () => Promise<number> {
  return () =>
    new Promise((resolve, reject) =>
      server.running.server.getConnections((error, n) => (error ? reject(error) : resolve(n))),
    );
}

test('every slot held by silent connections: a keyed request on a new connection is answered, and the oldest silent one is closed for it', async (t) => {
  const server = await startServer({ maxConnections: 10 });
  const peers: Peer[] = [];
  t.after(async () => {
    for (const p of peers) p.socket.destroy();
    await server.close();
  });
  peers.push(...(await open(server, 10, held(server), 10)));
  const health = new Peer(server.url);
  peers.push(health);
  await health.opened;
  assert.equal(await health.get('/healthz'), 200, '/healthz on a new connection');
  assert.equal((await request(server.url, 'GET', '/v1/pets')).status, 200, 'a keyed request on a new connection');
  assert.equal(await health.get('/healthz'), 200, 'the connection of /healthz is kept: it brought a request');
  await waitFor(() => peers.filter((p) => p.closed).length === 2, 5000, 'two silent connections closed');
  assert.deepEqual(
    peers.slice(0, 10).map((p) => p.closed),
    [true, true, false, false, false, false, false, false, false, false],
    'the two oldest',
  );
  assert.ok(
    peers.slice(0, 10).every((p) => p.data === ''),
    'closed without a byte',
  );
});

test('a new connection closes the oldest silent one of the address holding the most, not one of its own address; connections opened at once and left silent can be closed later', async (t) => {
  const server = await startServer({ maxConnections: 6 });
  const peers: Peer[] = [];
  t.after(async () => {
    for (const p of peers) p.socket.destroy();
    await server.close();
  });
  // Five at once from one address (Linux routes all of 127/8 to lo), then a client that is slow to write.
  const flood = [0, 1, 2, 3, 4].map(() => new Peer(server.url, '127.0.0.2'));
  peers.push(...flood);
  await Promise.all(flood.map((p) => p.opened));
  const slow = new Peer(server.url, '127.0.0.1');
  peers.push(slow);
  await slow.opened;
  await waitFor(async () => (await held(server)()) === 6, 5000, 'six slots held');
  await sleep(100);
  const next = new Peer(server.url, '127.0.0.1');
  peers.push(next);
  await next.opened;
  assert.equal(await next.get('/healthz'), 200);
  await waitFor(() => flood[0]?.closed === true, 5000, 'the oldest silent connection of 127.0.0.2 closed');
  assert.deepEqual(
    flood.map((p) => p.closed),
    [true, false, false, false, false],
    'only that one',
  );
  assert.equal(slow.closed, false, "the client of the newcomer's own address is kept");
  assert.equal(await slow.get('/healthz'), 200, 'and served when it writes');
});

test('a connection with a request in progress is never closed for room; one idle after its answer is, oldest first; with every slot busy a new connection is refused and counted', async (t) => {
  const server = await metricsServer(t, { maxConnections: 4 });
  const parsed = parsedHeads(server);
  const peers: Peer[] = [];
  t.after(() => peers.forEach((p) => p.socket.destroy()));
  // Two answered and idle on keep-alive (one cheap request each, no key), two with a keyed create
  // whose body has not come yet: a request in progress.
  const idle = await open(server, 2);
  peers.push(...idle);
  for (const peer of idle) assert.equal(await peer.get('/healthz'), 200);
  const busy = await open(server, 2, held(server), 4);
  peers.push(...busy);
  for (const peer of busy) peer.socket.write(POST_HEAD);
  await waitFor(() => parsed() === 4, 5000, 'the two creates in progress');
  for (let i = 0; i < 2; i++) {
    const peer = new Peer(server.url);
    peers.push(peer);
    await peer.opened;
    await waitFor(() => idle[i]?.closed === true, 5000, `the idle connection ${i + 1} closed for the new one`);
    // The new one brings a request in progress too.
    peer.socket.write(POST_HEAD);
  }
  assert.ok(
    busy.every((p) => !p.closed),
    'the connections with a request in progress are still open',
  );
  await waitFor(() => parsed() === 6, 5000, "the new connections' creates in progress");
  const refused = new Peer(server.url);
  peers.push(refused);
  await refused.opened;
  await waitFor(() => refused.closed, 5000, 'every slot busy: the new connection is refused');
  assert.equal(refused.data, '');
  // A request in progress ends: its answer goes out, and its connection is closable again.
  busy[0]?.socket.write(POST_BODY);
  await waitFor(() => /^HTTP\/1\.1 201 /.test(busy[0]?.data ?? ''), 5000, 'the create answered');
  await sleep(50);
  const last = new Peer(server.url);
  peers.push(last);
  await last.opened;
  await waitFor(() => busy[0]?.closed === true, 5000, 'the connection idle after its answer closed for the new one');
  assert.ok(!last.closed && !busy[1]?.closed);
  const { families } = await scrape(server.metricsUrl);
  assert.equal(metricValue(families, 'petstore_http_evicted_connections_total'), 3);
  assert.equal(metricValue(families, 'petstore_http_refused_connections_total'), 1);
  assert.equal(metricValue(families, 'petstore_http_max_connections'), 4);
});

test(
  'over TLS too, a connection with a request in progress is not closed for room; silent ones are',
  needsOpenssl,
  async (t) => {
    const { cert, key } = certificate(await tempDirFor(t), 'server');
    const ca = await readFile(cert);
    const server = await startServer({ maxConnections: 3, tls: { cert: ca, key: await readFile(key) } });
    const sockets: Socket[] = [];
    t.after(async () => {
      for (const s of sockets) s.destroy();
      await server.close();
    });
    const { port } = new URL(server.url);
    const served = tlsConnect({ port: Number(port), host: '127.0.0.1', ca });
    sockets.push(served);
    let data = '';
    served.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    const answers = (): number => data.split('HTTP/1.1 200').length - 1;
    await new Promise((resolve) => served.once('secureConnect', resolve));
    served.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
    await waitFor(() => answers() === 1, 5000, 'the first answer over TLS');
    served.write(POST_HEAD);
    // Two silent TCP connections fill the slots; three more come, each closing the oldest silent one.
    const silent = await open(server.url, 2, held(server), 3);
    const later = await open(server.url, 3);
    sockets.push(...[...silent, ...later].map((p) => p.socket));
    await waitFor(
      () => [...silent, ...later].filter((p) => p.closed).length === 3,
      5000,
      'three silent connections closed for room',
    );
    assert.ok(!served.destroyed, 'the TLS connection with a request in progress is still open');
    served.write(POST_BODY);
    await waitFor(() => data.includes('HTTP/1.1 201'), 5000, 'and its request is answered');
  },
);

test('the metrics listener: 32 silent connections do not block a scrape, and it closes a silent connection after its 10 s headers timeout, not 30 s later', {
  timeout: 120_000,
}, async (t) => {
  const server = await metricsServer(t);
  const peers: Peer[] = [];
  t.after(() => peers.forEach((p) => p.socket.destroy()));
  const first = new Peer(server.metricsUrl);
  peers.push(first);
  await first.opened;
  const since = performance.now();
  peers.push(...(await open(server.metricsUrl, 31)));
  const { text } = await scrape(server.metricsUrl);
  assert.match(text, /petstore_http_open_connections/);
  assert.ok(first.closed, 'the oldest silent connection made room for the scrape');
  const silent = new Peer(server.metricsUrl);
  peers.push(silent);
  await silent.opened;
  const opened = performance.now();
  // Node's default check every 30 s would keep it up to 40 s; every 2.5 s keeps it under 13 s.
  await waitFor(() => silent.closed, 20_000, 'the silent connection is closed');
  const after = performance.now() - opened;
  t.diagnostic(
    `closed ${Math.round(after)} ms after it opened (the first scrape ${Math.round(opened - since)} ms after the first silent connection)`,
  );
  assert.ok(after >= 9_000 && after < 14_000, `${Math.round(after)} ms`);
});

test(
  'over TLS, handshakes that never finish and connections that finish theirs and send nothing are closed for room: ' +
    'keyed requests on fresh connections are answered',
  needsOpenssl,
  async (t) => {
    const { cert, key } = certificate(await tempDirFor(t), 'server');
    const ca = await readFile(cert);
    const server = await metricsServer(t, { maxConnections: 4, tls: { cert: ca, key: await readFile(key) } });
    const sockets: Socket[] = [];
    t.after(() => sockets.forEach((s) => s.destroy()));
    const { port } = new URL(server.url);
    // Two that start a handshake record and never finish it; two that finish it and send nothing.
    const stuck = await open(server.url, 2, held(server), 2);
    for (const peer of stuck) peer.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
    sockets.push(...stuck.map((p) => p.socket));
    const silent: Socket[] = [];
    for (let i = 0; i < 2; i++) {
      const socket = tlsConnect({ port: Number(port), host: '127.0.0.1', ca });
      socket.on('error', () => {});
      silent.push(socket);
      await new Promise((resolve) => socket.once('secureConnect', resolve));
    }
    sockets.push(...silent);
    await sleep(100);
    for (let i = 0; i < 4; i++) {
      const client = tlsConnect({ port: Number(port), host: '127.0.0.1', ca });
      sockets.push(client);
      client.on('error', () => {});
      let data = '';
      client.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
      await new Promise((resolve) => client.once('secureConnect', resolve));
      client.write(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`);
      const answered = (): boolean => /^HTTP\/1\.1 \d{3} /.test(data) || client.destroyed;
      await waitFor(answered, 5000, `an answer to keyed request ${i + 1}`);
      assert.match(data, /^HTTP\/1\.1 200 /, `keyed request ${i + 1} (kept open after its answer)`);
    }
    const allClosed = (): boolean => stuck.every((p) => p.closed) && silent.every((s) => s.destroyed);
    await waitFor(allClosed, 5000, 'the four closed for room');
    const { families } = await scrape(server.metricsUrl);
    assert.equal(metricValue(families, 'petstore_http_evicted_connections_total'), 4);
    assert.equal(metricValue(families, 'petstore_http_refused_connections_total'), 0);
  },
);
