/**
 * The feed at its edges, found by a review from outside: a client slow but reading is never taken for
 * a stalled one; a stop is not held up by a client that takes nothing; a stream still being opened
 * when the stop comes gets the stop's 503, not a bare 200; a waiting request whose client went while
 * its first page was read (an async store, as PostgreSQL is) gives its place back at once.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { cp, rm } from 'node:fs/promises';
import { after, test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseResponse } from './fuzz-corpus.js';
import { request, startServer, tempDir, tempDirFor, TEST_KEY, waitFor, within, type TestServer } from './support.js';
import { openStream, parseEvents } from './stream-support.js';
import { FileStore, type ListQuery, type ListText, type PetStore } from './package.js';

const COUNT = 30_000;
let written: Promise<string> | undefined;
after(async () => {
  if (written !== undefined) await rm(await written, { recursive: true, force: true });
});

/**
 * A data directory of its own holding COUNT pets with 256-character names: 9.6 MB of events, far more than
 * the sockets' buffers hold (about 4 MB here). Written once for the file (a second of CPU), copied for each test.
 */
async function backlog(t: TestContext): Promise<string> {
  written ??= (async () => {
    const dir = await tempDir();
    const store = await FileStore.open(dir);
    await Promise.all(
      Array.from({ length: COUNT }, (_, i) => store.create({ name: `${i}`.padEnd(256, 'x'), categoryId: BigInt(i) })),
    );
    await store.close();
    return dir;
  })();
  const dir = await tempDirFor(t);
  await cp(await written, dir, { recursive: true });
  return dir;
}

/** A raw connection asking for the stream, and the server's end of it (to see what it holds unsent). */
async function rawStream(t: TestContext, server: TestServer): Promise<{ socket: Socket; serverSide: Socket }> {
  const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
  t.after(() => socket.destroy());
  await new Promise((r) => socket.once('connect', r));
  const [serverSide] = await Promise.all([
    new Promise<Socket>((r) => server.running.server.once('request', (req) => r(req.socket))),
    socket.write(
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`,
    ),
  ]);
  return { socket, serverSide };
}

/** Page reads a slow store has begun and finished, for a test to wait on. */
interface Reads {
  begun: number;
  finished: number;
}

/** `store` with every page read taking `ms` more, as a database's does: an embedder's store, wrapped. */
function slowReads(store: PetStore, ms: number, reads: Reads = { begun: 0, finished: 0 }): PetStore {
  return new Proxy(store, {
    get(target, name, receiver) {
      if (name === 'listText')
        return async (query: ListQuery): Promise<ListText> => {
          reads.begun++;
          await sleep(ms);
          const page = await (target.listText as (q: ListQuery) => ListText | Promise<ListText>)(query);
          reads.finished++;
          return page;
        };
      if (name === 'list')
        return async (query: ListQuery) => {
          reads.begun++;
          await sleep(ms);
          const page = await target.list(query);
          reads.finished++;
          return page;
        };
      const value: unknown = Reflect.get(target, name, receiver);
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

test('a reader that is slow but reading is never cut off, however long it takes to catch up', {
  timeout: 120_000,
}, async (t) => {
  const count = COUNT;
  const dir = await backlog(t);
  const said: string[] = [];
  const logger = { request() {}, error() {}, info: (msg: string) => void said.push(msg) };
  const server = await startServer({ dataDir: dir, streamHeartbeat: 1, logger });
  t.after(() => server.close());
  const { socket, serverSide } = await rawStream(t, server);
  // About 1.3 MB/s: a chunk, then 50 ms of nothing. The buffers fill within seconds and stay full
  // while the server reads on from the store at each 'drain'; the catch-up takes several heartbeats.
  const chunks: Buffer[] = [];
  let full = 0;
  const watch = setInterval(() => (full += serverSide.writableNeedDrain ? 1 : 0), 100);
  t.after(() => clearInterval(watch));
  const last = `id: ${count}\n`;
  let tail = ''; // the end of what came before, for an id split across two chunks
  const caughtUp = new Promise<void>((resolve, reject) => {
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      const text = tail + chunk.toString('latin1');
      if (text.includes(last)) resolve();
      tail = text.slice(-last.length);
      socket.pause();
      setTimeout(() => socket.resume(), 50);
    });
    socket.once('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      reject(new Error(`the stream ended after ${parseEvents(text).length} events`));
    });
  });
  const started = Date.now();
  await within(caughtUp, 60_000, 'every event of the backlog');
  clearInterval(watch);
  t.diagnostic(
    `caught up with ${count} events in ${Date.now() - started} ms; the server's buffer was full at ${full} of the 100 ms samples`,
  );
  assert.ok(full >= 20, `the buffers were full for at least two heartbeats: ${full} samples`);
  assert.equal(said.filter((msg) => msg.startsWith('event stream ended')).length, 0, said.join('\n'));
  const answer = parseResponse(Buffer.concat(chunks), true, false)?.answer;
  const ids = parseEvents(answer?.body.toString('utf8') ?? '').map((e) => Number(e.id));
  assert.deepEqual(
    ids,
    Array.from({ length: count }, (_, i) => i + 1),
  );
});

test('a client that takes nothing does not hold up the stop: its stream is cut, and the stop takes what it takes without it', {
  timeout: 120_000,
}, async (t) => {
  const dir = await backlog(t);
  const server = await startServer({ dataDir: dir, streamHeartbeat: 60, shutdownTimeout: 10_000 });
  t.after(() => server.close());
  const { socket, serverSide } = await rawStream(t, server);
  socket.pause(); // reads nothing: what was sent stays in the buffers
  await waitFor(() => serverSide.writableNeedDrain, 10_000, "the server's buffer fills");
  const quiet = await openStream(server.url, `/v1/pets?after=${COUNT}`);
  t.after(() => quiet.close());
  const started = performance.now();
  await within(server.running.close(), 5000, 'the stop');
  const ms = Math.round(performance.now() - started);
  t.diagnostic(`stopped ${ms} ms after close() (--shutdown-timeout 10000)`);
  assert.ok(ms < 2000, `the stop took ${ms} ms`);
  assert.equal(
    await within(quiet.ended, 1000, 'the quiet stream ends'),
    'end',
    'a stream whose client has taken everything still ends cleanly',
  );
});

test("a stream still being opened when the stop comes gets the stop's 503, with its headers; nothing is logged as an error", {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  const errors: string[] = [];
  const logger = { request() {}, info() {}, error: (msg: string) => void errors.push(msg) };
  const reads = { begun: 0, finished: 0 };
  const store = slowReads(await FileStore.open(dir), 500, reads);
  const server = await startServer({ dataDir: dir, store, logger });
  t.after(() => server.close());
  const opening = openStream(server.url);
  await waitFor(() => reads.begun === 1, 5000, 'its first page is being read');
  const stop = server.running.close();
  const answer = await within(opening, 5000, 'the answer');
  await within(stop, 5000, 'the stop');
  assert.equal(answer.status, 503);
  assert.equal(answer.headers['content-type'], 'application/json');
  assert.equal(answer.headers['retry-after'], '1');
  assert.equal(answer.headers.connection, 'close');
  assert.match(String(answer.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  await answer.ended;
  assert.deepEqual(JSON.parse(answer.text()), {
    code: 'unavailable',
    message: 'the server is stopping; try again shortly',
    status: 503,
  });
  assert.deepEqual(errors, []);
});

test('a waiting request whose client went while its first page was read gives its place back at once', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  const reads = { begun: 0, finished: 0 };
  const store = slowReads(await FileStore.open(dir), 300, reads);
  const server = await startServer({ dataDir: dir, store, maxStreams: 1 });
  t.after(() => server.close());
  // Asked for, and gone before its empty first page is read: 'close' comes before the wait begins.
  for (let i = 1; i <= 3; i++) {
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(`GET /v1/pets?wait=30 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`);
    await waitFor(() => reads.begun === i, 5000, `the first page of request ${i} is being read`);
    socket.destroy();
  }
  await waitFor(() => reads.finished === 3, 5000, 'every first page read');
  await new Promise((r) => setImmediate(r)); // and each wait begun or given up, on the same turn
  const next = await within(request(server.url, 'GET', '/v1/pets?wait=1'), 5000, 'a wait of one second');
  assert.equal(next.status, 200, `the one place under --max-streams 1 is free: ${next.text}`);
  assert.equal(next.text, '[]');
});
