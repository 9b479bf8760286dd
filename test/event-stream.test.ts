/**
 * `GET /v1/pets` as `text/event-stream` over the file store: the stored pets after the cursor, then
 * each new one, byte for byte as the API returns them; Last-Event-ID; the status filter; heartbeats;
 * the limit of open streams; a reader that stops reading; a stop with streams open.
 */
import assert from 'node:assert/strict';
import { get as httpGet, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { test } from 'node:test';
import { parseResponse } from './fuzz-corpus.js';
import { request, spawnServerFor, startServer, tempDirFor, TEST_KEY, within, type TestServer } from './support.js';
import { eventsOf, openStream, parseEvents } from './stream-support.js';
import { listenerExposition, waitForHeld } from './metrics-support.js';
import { metricsUrlOf } from './replication-support.js';
import { FileStore } from './package.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
const RETRY = 'retry: 1000\n\n';

/** Creates a pet from `pet`, whose categoryId may be given as its digits (a string) to keep every one. */
async function create(
  server: TestServer,
  pet: { name: string; categoryId: number | string; status?: string | undefined },
): Promise<string> {
  const body = JSON.stringify(pet).replace(/"categoryId":"(-?\d+)"/, '"categoryId":$1');
  const res = await server.request('POST', '/v1/pets', { headers: JSON_HEADERS, body });
  assert.equal(res.status, 201, res.text);
  return res.text;
}

/** The pet's JSON exactly as getPet answers it. */
async function petText(server: TestServer, id: number): Promise<string> {
  const res = await server.request('GET', `/v1/pets/${id}`);
  assert.equal(res.status, 200);
  return res.text;
}

test("a stream sends the stored pets after the cursor, then each new pet as it is committed, each event the pet's exact JSON", async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const names = ['Rex', 'Zoë "the" \\ cat', '猫 🐈 \u2028 line', 'nul \u0000 and \n newline'];
  for (const [i, name] of names.entries())
    await create(server, {
      name,
      categoryId: i === 1 ? '9223372036854775807' : i,
      status: i % 2 === 0 ? 'sold' : undefined,
    });

  const stream = await openStream(server.url, '/v1/pets?after=1');
  t.after(() => stream.close());
  assert.equal(stream.status, 200);
  assert.equal(stream.headers['content-type'], 'text/event-stream');
  assert.equal(stream.headers['cache-control'], 'no-store, no-transform');
  assert.equal(stream.headers['x-accel-buffering'], 'no');
  assert.equal(stream.headers['content-length'], undefined);
  assert.equal(stream.headers['content-encoding'], undefined);
  assert.match(String(stream.headers['x-request-id']), /^[0-9a-f-]{36}$/);
  const stored = [await petText(server, 2), await petText(server, 3), await petText(server, 4)];
  await stream.until((text) => text === RETRY + eventsOf(stored), 5000, 'the stored pets after 1');

  await create(server, { name: 'Live', categoryId: '-9223372036854775808' });
  await create(server, { name: 'Later', categoryId: 7, status: 'pending' });
  const live = [await petText(server, 5), await petText(server, 6)];
  await stream.until(
    (text) => text.length >= (RETRY + eventsOf([...stored, ...live])).length,
    5000,
    'the two new pets',
  );
  assert.equal(stream.text(), RETRY + eventsOf([...stored, ...live]));
  assert.deepEqual(
    stream.events().map((e) => [e.id, e.event]),
    [
      ['2', 'pet'],
      ['3', 'pet'],
      ['4', 'pet'],
      ['5', 'pet'],
      ['6', 'pet'],
    ],
  );
});

test('with status, a stream sends only the pets with that status: a pending pet sends nothing to a stream of sold ones', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  await create(server, { name: 'Old sold', categoryId: 1, status: 'sold' });
  await create(server, { name: 'Old pending', categoryId: 1, status: 'pending' });
  const stream = await openStream(server.url, '/v1/pets?status=sold');
  t.after(() => stream.close());
  await stream.until(
    (text) => text === RETRY + eventsOf([`{"id":1,"name":"Old sold","categoryId":1,"status":"sold"}`]),
    5000,
    'the stored sold pet',
  );
  await create(server, { name: 'Pending', categoryId: 2, status: 'pending' });
  await create(server, { name: 'None', categoryId: 2 });
  // Pets of another status send nothing: the events after the sold one's are only the two sold pets' ids.
  const sold = await create(server, { name: 'Sold', categoryId: 3, status: 'sold' });
  await stream.until((text) => text.endsWith(eventsOf([sold])), 5000, 'the new sold pet');
  assert.deepEqual(
    stream.events().map((e) => e.id),
    ['1', '5'],
  );
});

test('Last-Event-ID resumes after that id, overriding after: every pet once, none missed while away', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  for (let i = 1; i <= 3; i++) await create(server, { name: `P${i}`, categoryId: i });
  const first = await openStream(server.url);
  await first.until((text) => parseEvents(text).length === 3, 5000, 'three events');
  first.close();
  const last = first.events().at(-1)?.id as string;
  assert.equal(last, '3');

  // Created while no stream is open.
  const away = [
    await create(server, { name: 'P4', categoryId: 4 }),
    await create(server, { name: 'P5', categoryId: 5 }),
  ];
  const resumed = await openStream(server.url, '/v1/pets?after=1', [['last-event-id', last]]);
  t.after(() => resumed.close());
  await resumed.until((text) => text === RETRY + eventsOf(away), 5000, 'pets 4 and 5, and only they');
  const live = await create(server, { name: 'P6', categoryId: 6 });
  await resumed.until((text) => text === RETRY + eventsOf([...away, live]), 5000, 'then pet 6');
  const ids = [...first.events(), ...resumed.events()].map((e) => Number(e.id));
  assert.deepEqual(ids, [1, 2, 3, 4, 5, 6], 'no gap, no duplicate');
});

test('a Last-Event-ID that is not a pet id is a 400; HEAD, or an Accept that refuses the stream, answer the page', {
  timeout: 120_000,
}, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  await create(server, { name: 'Rex', categoryId: 1 });
  for (const bad of ['abc', '-1', '1.5', '', '99999999999999999999', '1, 2']) {
    const res = await server.request('GET', '/v1/pets', {
      headers: [
        ['accept', 'text/event-stream'],
        ['last-event-id', bad],
      ],
    });
    assert.equal(res.status, 400, `Last-Event-ID ${JSON.stringify(bad)}: ${res.text}`);
    assert.match((res.json as { message: string }).message, /Last-Event-ID/);
  }
  const head = await server.request('HEAD', '/v1/pets', { headers: [['accept', 'text/event-stream']] });
  assert.equal(head.status, 200);
  assert.equal(head.headers['content-type'], 'application/json');
  for (const accept of ['text/event-stream;q=0, application/json', 'application/json', '*/*', 'text/*']) {
    const res = await server.request('GET', '/v1/pets', { headers: [['accept', accept]] });
    assert.equal(res.headers['content-type'], 'application/json', accept);
    assert.equal(res.text, '[{"id":1,"name":"Rex","categoryId":1}]');
  }
  const stream = await openStream(server.url, '/v1/pets', [
    ['accept', 'application/json;q=0.5, text/event-stream;q=0.9'],
  ]);
  t.after(() => stream.close());
  assert.equal(stream.headers['content-type'], 'text/event-stream');
  // Media types are case-insensitive (RFC 9110 §8.3.1): the only Accept, in capitals, still asks for the stream.
  for (const accept of ['Text/Event-Stream', 'TEXT/EVENT-STREAM;q=1']) {
    const head = await new Promise<IncomingMessage>((resolve, reject) => {
      const req = httpGet(
        `${server.url}/v1/pets`,
        { headers: { accept, authorization: `Bearer ${TEST_KEY}` } },
        resolve,
      );
      req.once('error', reject);
    });
    head.destroy();
    assert.equal(head.headers['content-type'], 'text/event-stream', accept);
  }
});

test('a quiet stream sends a heartbeat comment every heartbeat interval', async (t) => {
  const server = await startServer({ streamHeartbeat: 1 });
  t.after(() => server.close());
  const stream = await openStream(server.url);
  t.after(() => stream.close());
  await stream.until((text) => text === `${RETRY}: heartbeat\n\n: heartbeat\n\n`, 4000, 'two heartbeats');
  assert.deepEqual(stream.events(), []);
});

test('streams beyond --max-streams get 503 with Retry-After, waiting requests count too, and a closed stream frees its place', {
  timeout: 120_000,
}, async (t) => {
  const server = await startServer({ maxStreams: 2, metricsPort: 0 });
  t.after(() => server.close());
  const streams = [await openStream(server.url), await openStream(server.url)];
  t.after(() => streams.forEach((s) => s.close()));
  const refused = await server.request('GET', '/v1/pets', { headers: [['accept', 'text/event-stream']] });
  assert.equal(refused.status, 503);
  assert.equal(refused.headers['retry-after'], '5');
  assert.equal(refused.headers['content-type'], 'application/json');
  assert.equal((refused.json as { code: string }).code, 'unavailable');
  assert.match((refused.json as { message: string }).message, /holds 2 event streams and waiting requests/);
  const waiting = await server.request('GET', '/v1/pets?wait=5');
  assert.equal(waiting.status, 503, 'a long poll takes a place as a stream does');

  streams[0]?.close();
  const exposition = listenerExposition(server.running.metricsUrl as string);
  await waitForHeld(exposition, { stream: 1, wait: 0 }, 'the closed stream let go');
  const reopened = await openStream(server.url);
  reopened.close();
  assert.equal(reopened.status, 200, 'the place of a closed stream is free again');
});

test('a reader that stops reading is cut off after two heartbeats without taking a byte; it resumes with Last-Event-ID, missing nothing', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  // A backlog far larger than the sockets' buffers (about 4 MB here): 30,000 pets of 256-character names, 9.6 MB of events.
  const store = await FileStore.open(dir);
  const count = 30_000;
  await Promise.all(
    Array.from({ length: count }, (_, i) => store.create({ name: `${i}`.padEnd(256, 'x'), categoryId: BigInt(i) })),
  );
  await store.close();
  const said: string[] = [];
  const logger = {
    request() {},
    error() {},
    info: (msg: string, fields?: object) => void said.push(`${msg} ${JSON.stringify(fields)}`),
  };
  const server = await startServer({ dataDir: dir, streamHeartbeat: 1, maxStreams: 1, logger, metricsPort: 0 });
  t.after(() => server.close());

  const { port } = new URL(server.url);
  const socket = connect(Number(port), '127.0.0.1');
  t.after(() => socket.destroy());
  await new Promise((r) => socket.once('connect', r));
  // The server's end of this connection, to see how much it holds that the client has not taken.
  const [serverSide] = await Promise.all([
    new Promise<Socket>((r) => server.running.server.once('request', (req) => r(req.socket))),
    socket.write(
      `GET /v1/pets HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`,
    ),
  ]);
  let held = 0;
  const watch = setInterval(() => (held = Math.max(held, serverSide.writableLength)), 5);
  t.after(() => clearInterval(watch));
  // Not reading: the socket takes what fits in its buffer and the kernel's, then nothing more.
  const started = Date.now();
  const exposition = listenerExposition(server.running.metricsUrl as string);
  await waitForHeld(exposition, { stream: 1, wait: 0 }, 'the stalled stream is held');
  assert.equal((await openStream(server.url)).status, 503, 'its one place is taken');
  await waitForHeld(exposition, { stream: 0, wait: 0 }, 'the stalled stream is ended', 20_000);
  const other = await openStream(server.url);
  other.close();
  assert.equal(other.status, 200, 'the only place is free again');
  clearInterval(watch);
  t.diagnostic(
    `the stalled stream was ended ${Date.now() - started} ms after it began; the server held at most ${held} bytes it had not sent`,
  );
  assert.ok(
    held <= 64 * 1024,
    `the server held at most its high-water mark and one page unsent, not the backlog: ${held} bytes`,
  );
  assert.ok(
    said.some((line) =>
      /^event stream ended: its client took none of what it was sent for two heartbeat intervals \{"after":\d+\}$/.test(
        line,
      ),
    ),
    said.join('\n'),
  );

  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await within(new Promise((r) => socket.once('end', r)), 10_000, 'the rest of what was sent, then the end');
  const answer = parseResponse(Buffer.concat(chunks), true, false)?.answer;
  assert.equal(answer?.status, 200);
  const received = parseEvents(answer.body.toString('utf8')).map((e) => Number(e.id));
  assert.ok(received.length > 0 && received.length < count, `cut short: ${received.length} of ${count} events arrived`);
  assert.deepEqual(
    received,
    Array.from({ length: received.length }, (_, i) => i + 1),
    'those that arrived are the first, in order',
  );
  t.diagnostic(`${received.length} events (${answer.body.length} bytes) arrived before the cut`);

  const resumed = await openStream(server.url, '/v1/pets', [['last-event-id', String(received.at(-1))]]);
  t.after(() => resumed.close());
  await resumed.until((text) => parseEvents(text).length === count - received.length, 20_000, 'the rest');
  const rest = resumed.events().map((e) => Number(e.id));
  assert.deepEqual(
    [...received, ...rest],
    Array.from({ length: count }, (_, i) => i + 1),
    'every pet once, in order',
  );
});

test('SIGTERM ends open streams cleanly and answers waiting requests at once: the stop takes no longer than without them', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t, 'petstore-stop-');
  const args = ['--data-dir', dir, '--metrics-port', '0'];
  const server = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  const created = await request(server.url, 'POST', '/v1/pets', {
    headers: JSON_HEADERS,
    body: '{"name":"Rex","categoryId":1}',
  });
  const streams = await Promise.all([0, 1, 2].map(() => openStream(server.url)));
  for (const s of streams) await s.until((text) => text === RETRY + eventsOf([created.text]), 5000, 'the stored pet');
  const waiting = request(server.url, 'GET', '/v1/pets?after=1&wait=30');
  await waitForHeld(listenerExposition(metricsUrlOf(server)), { stream: 3, wait: 1 }, 'three streams and a wait');
  const started = performance.now();
  server.child.kill('SIGTERM');
  const ends = await within(Promise.all(streams.map((s) => s.ended)), 5000, 'the streams end');
  assert.deepEqual(ends, ['end', 'end', 'end'], 'each stream ends cleanly (its last chunk), not cut');
  const answer = await within(waiting, 5000, 'the waiting request is answered');
  assert.equal(answer.status, 200);
  assert.equal(answer.text, '[]');
  assert.equal(answer.headers.connection, 'close');
  await within(server.exited, 5000, 'exit');
  const ms = Math.round(performance.now() - started);
  t.diagnostic(`exited ${ms} ms after SIGTERM`);
  assert.equal(server.child.exitCode, 0);
  assert.ok(ms < 1000, `exited ${ms} ms after SIGTERM`);
  for (const s of streams) assert.equal(s.text(), RETRY + eventsOf([created.text]), 'nothing but whole events');
});
