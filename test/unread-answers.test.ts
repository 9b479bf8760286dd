/**
 * Answers a client never reads (issue 41): a connection is read only while few of its answers are
 * unsent, an answer that makes no progress for --send-timeout ends its connection, and at
 * --max-connections a connection whose only work is such answers is closed for room like an idle
 * one. A client that reads slowly but steadily is never cut. Over HTTP and TLS.
 *
 * The kernel's buffers on loopback take about 4 MB of a connection's answers before the server holds
 * any: the answers here are pages of 100 pets with names of 256 four-byte characters (about 100 kB).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { connect, type Socket } from 'node:net';
import { describe, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect } from 'node:tls';
import { metricValue } from './exposition-parser.js';
import { tempDirFor, TEST_KEY, waitFor, type TestServer } from './support.js';
import { bigPages } from './pages-support.js';
import { metricsServer, requestCounts, scrape } from './metrics-support.js';
import type { ListenOptions } from './package.js';
import { certificate, needsOpenssl } from './tls-support.js';

const PAGE = `GET /v1/pets?limit=100 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`;
/** Answers a connection may have made and not yet sent; requests it may have unanswered in all (operations.md). */
const ANSWERING = 8;
const OUTSTANDING = 64;

interface Served {
  server: TestServer;
  metricsUrl: string;
  /**
   * The server's end of each connection, as requests name it (the TLS socket with TLS): a client that
   * does not read sees no close, since its unread bytes come before the end.
   */
  serverSides: Socket[];
  ca: Buffer | undefined;
}

async function serve(t: TestContext, tls: boolean, options: Partial<ListenOptions> = {}): Promise<Served> {
  const dataDir = await bigPages(t);
  let ca: Buffer | undefined;
  if (tls) {
    const files = certificate(await tempDirFor(t), 'server');
    ca = await readFile(files.cert);
    options = { ...options, tls: { cert: ca, key: await readFile(files.key) } };
  }
  const server = await metricsServer(t, { dataDir, ...options });
  const serverSides: Socket[] = [];
  server.running.server.on('request', (req) => {
    if (!serverSides.includes(req.socket)) serverSides.push(req.socket);
  });
  return { server, serverSides, ca, metricsUrl: server.metricsUrl };
}

/** A client connection (TCP or TLS) from `localAddress`: what it received, whether it was closed. */
class Client {
  readonly socket: Socket;
  received = 0;
  closed = false;
  readonly ready: Promise<void>;

  constructor(t: TestContext, url: string, ca: Buffer | undefined, localAddress = '127.0.0.1') {
    const { hostname, port } = new URL(url);
    this.socket =
      ca === undefined
        ? connect({ port: Number(port), host: hostname, localAddress })
        : tlsConnect({ port: Number(port), host: hostname, ca, ...({ localAddress } as object) });
    t.after(() => this.socket.destroy());
    this.socket.on('error', () => {}); // a reset is a close
    this.socket.once('close', () => (this.closed = true));
    this.socket.on('data', (chunk: Buffer) => (this.received += chunk.length));
    const ready = ca === undefined ? 'connect' : 'secureConnect';
    this.ready = new Promise((resolve) => this.socket.once(ready, () => resolve()));
  }

  /** Pipelines `count` requests for a page, and never reads again. */
  async neverReading(count: number): Promise<void> {
    await this.ready;
    this.socket.pause();
    this.socket.write(PAGE.repeat(count));
  }
}

/** A keyed GET on a fresh connection (closed after, unless `keep`): its status, or 0 when none came within 5 s. */
async function keyedGet(t: TestContext, url: string, ca: Buffer | undefined, keep = false): Promise<number> {
  const fresh = new Client(t, url, ca);
  await fresh.ready;
  let text = '';
  fresh.socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  fresh.socket.write(`GET /v1/pets?limit=1 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`);
  const answered = (): boolean => /^HTTP\/1\.1 \d{3} /.test(text) || fresh.closed;
  await waitFor(answered, 5000, 'an answer to a keyed GET').catch(() => undefined);
  if (!keep) fresh.socket.destroy();
  return Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
}

/** Waits until the kernel has taken nothing more from any of `sides` for 500 ms: their clients' buffers are full. */
async function stalled(sides: Socket[]): Promise<void> {
  const taken = (side: Socket): number => side.bytesWritten - side.writableLength;
  let last = sides.map(taken);
  let since = performance.now();
  await waitFor(
    () => {
      const now = sides.map(taken);
      if (now.some((bytes, i) => bytes !== last[i])) [last, since] = [now, performance.now()];
      return performance.now() - since >= 500 && sides.every((side) => unsent(side) > 0);
    },
    15_000,
    'the answers held unsent, taken no further',
  );
}

/** What the server holds unsent on `socket`: its buffer, and the answers made behind the one being written. */
function unsent(socket: Socket): number {
  return socket.writableLength;
}

// The two transports side by side, each one test at a time: each test has a server of its own, and most
// of their time is spent waiting on clients paced in time (the slow reader alone takes 11-15 s).
describe('answers a client never reads', { concurrency: 2 }, () => {
  for (const tls of [false, true]) {
    const over = tls ? 'over TLS' : 'over HTTP';
    const needs = tls ? needsOpenssl : {};
    describe(over, { concurrency: 1 }, () => {
      test(`${over}: a pipelining client that never reads is read no further while ${ANSWERING} answers are unsent, ` +
        'and is closed after --send-timeout without progress', { ...needs, timeout: 30_000 }, async (t) => {
        const { server, serverSides, ca, metricsUrl } = await serve(t, tls, { sendTimeout: 1 });
        let requests = 0;
        let finished = 0;
        server.running.server.on('request', (_req, res) => {
          requests++;
          res.on('finish', () => finished++);
        });
        const client = new Client(t, server.url, ca);
        await client.neverReading(OUTSTANDING);
        const held = (): boolean => serverSides.length === 1 && unsent(serverSides[0] as Socket) > 0;
        await waitFor(held, 10_000, 'answers held unsent');
        const stalledAt = performance.now();
        await stalled(serverSides);
        // The kernel's buffers full, the server makes no more answers than 8 beyond those it has sent.
        const made = requestCounts((await scrape(metricsUrl)).families)['GET /v1/pets 200'] ?? 0;
        assert.equal(made - finished, ANSWERING, `${made} answers made, ${finished} sent, of ${requests} requests`);
        await waitFor(() => serverSides[0]?.destroyed === true, 10_000, 'the connection closed for its send timeout');
        const after = performance.now() - stalledAt;
        t.diagnostic(`closed ${Math.round(after)} ms after the server first held answers unsent; ${requests} requests`);
        assert.ok(after >= 500, `not before the send timeout: ${Math.round(after)} ms`);
        const { families } = await scrape(metricsUrl);
        assert.equal(metricValue(families, 'petstore_http_ended_connections_total', { reason: 'send_timeout' }), 1);
        assert.equal(await keyedGet(t, server.url, ca), 200, 'another client is served as ever');
      });

      test(`${over}: a client with more than ${OUTSTANDING} requests unanswered on one connection is closed, and counted`, {
        ...needs,
        timeout: 30_000,
      }, async (t) => {
        const { server, serverSides, ca, metricsUrl } = await serve(t, tls);
        const client = new Client(t, server.url, ca);
        const stackTraceLimit = Error.stackTraceLimit;
        await client.neverReading(200);
        await waitFor(() => serverSides[0]?.destroyed === true, 10_000, 'the connection closed');
        const { families } = await scrape(metricsUrl);
        assert.equal(metricValue(families, 'petstore_http_ended_connections_total', { reason: 'pipelining_limit' }), 1);
        // Its unanswered requests' errors were made without stacks (unheard-end.ts): errors after it have them again.
        assert.equal(Error.stackTraceLimit, stackTraceLimit);
        assert.match(String(new Error('after').stack), /\n\s+at /);
      });

      test(`${over}: at --max-connections, connections whose only work is answers their clients do not read ` +
        'are closed for room: a keyed request on a fresh connection is answered', {
        ...needs,
        timeout: 30_000,
      }, async (t) => {
        const { server, serverSides, ca, metricsUrl } = await serve(t, tls, { maxConnections: 4 });
        for (let i = 0; i < 4; i++) await new Client(t, server.url, ca, '127.0.0.2').neverReading(OUTSTANDING);
        await waitFor(() => serverSides.length === 4, 10_000, 'every slot holds requests');
        await stalled(serverSides);
        // Closable once their answers have made no progress for a sweep of the send watch (250 ms).
        await sleep(300);
        const floodSides = serverSides.slice();
        // Each kept open after its answer: the next needs a slot of its own.
        for (let i = 0; i < 3; i++) {
          assert.equal(await keyedGet(t, server.url, ca, true), 200, `keyed request ${i + 1} on a fresh connection`);
        }
        assert.equal(
          floodSides.filter((s) => s.destroyed).length,
          3,
          'three of the unread connections closed for room',
        );
        const { families } = await scrape(metricsUrl);
        assert.equal(metricValue(families, 'petstore_http_evicted_connections_total'), 3);
      });

      test(`${over}: at --max-connections, a connection not read further for its unsent answers is closable though ` +
        'a request body of its own is unfinished: the server, not its client, stopped reading it', {
        ...needs,
        timeout: 30_000,
      }, async (t) => {
        const { server, serverSides, ca } = await serve(t, tls, { maxConnections: 4 });
        const post =
          `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n` +
          'Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"name":';
        for (let i = 0; i < 4; i++) {
          const client = new Client(t, server.url, ca, '127.0.0.2');
          await client.neverReading(OUTSTANDING - 1);
          client.socket.write(post);
        }
        await waitFor(() => serverSides.length === 4, 10_000, 'every slot holds requests');
        await stalled(serverSides);
        await sleep(300);
        const floodSides = serverSides.slice();
        assert.equal(await keyedGet(t, server.url, ca, true), 200, 'a keyed request on a fresh connection');
        assert.equal(floodSides.filter((s) => s.destroyed).length, 1, 'one of the unread connections closed for room');
      });

      test(`${over}: a client reading slowly but steadily is not cut, though its answers take many times --send-timeout`, {
        ...needs,
        timeout: 90_000,
      }, async (t) => {
        // The kernel wakes a writer once about a third of its buffer has drained: on loopback (4 MB) a
        // reader at 640 kB/s shows progress every 2 s or so, which a send timeout of 4 s leaves room for.
        const { server, serverSides, ca, metricsUrl } = await serve(t, tls, { sendTimeout: 4 });
        const client = new Client(t, server.url, ca);
        await client.ready;
        // About 640 kB/s: 64 kB, then 100 ms of nothing; up to 60 requests ahead of the
        // answers, 6 MB, more than the kernel's buffers hold.
        const total = 100;
        let sent = 0;
        let answers = 0;
        let tail = '';
        let sincePause = 0;
        client.socket.on('data', (chunk: Buffer) => {
          const text = tail + chunk.toString('latin1');
          answers += text.split('HTTP/1.1 200 OK').length - 1;
          tail = text.slice(-20);
          sincePause += chunk.length;
          if (sincePause >= 64 * 1024) {
            sincePause = 0;
            client.socket.pause();
            setTimeout(() => client.socket.resume(), 100);
          }
          if (sent < total && sent - answers <= 40) {
            client.socket.write(PAGE.repeat(20));
            sent += 20;
          }
        });
        client.socket.write(PAGE.repeat(40));
        sent = 40;
        let held = 0;
        const watch = setInterval(() => (held += serverSides.some((s) => unsent(s) > 0) ? 1 : 0), 100);
        t.after(() => clearInterval(watch));
        const started = performance.now();
        await waitFor(() => answers >= total || client.closed, 50_000, 'every answer');
        clearInterval(watch);
        const ms = Math.round(performance.now() - started);
        const kB = Math.round(client.received / 1024);
        t.diagnostic(`${answers} answers (${kB} kB) in ${ms} ms; unsent at ${held} of the 100 ms samples`);
        const { families, text } = await scrape(metricsUrl);
        const ended = text.split('\n').filter((line) => line.startsWith('petstore_http_ended'));
        assert.equal(client.closed, false, `not cut: ${ended.join(', ')}`);
        assert.equal(answers, total);
        assert.ok(
          held >= 60,
          `the server held unsent answers for half as long again as the send timeout: ${held} samples`,
        );
        assert.equal(metricValue(families, 'petstore_http_ended_connections_total', { reason: 'send_timeout' }), 0);
      });
    });
  }
});
