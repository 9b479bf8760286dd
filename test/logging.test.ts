/**
 * What the server writes about requests: one JSON line each on stdout, with the request id the
 * client sees, and never a key, an Authorization header or a query string. Also the unauthenticated
 * health endpoints, which live outside /v1 and say nothing about pets.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { Writable } from 'node:stream';
import { test, type TestContext } from 'node:test';
import {
  request,
  SERVER_JS,
  spawnQuietServerFor,
  spawnServerFor,
  startServer,
  stopProcess,
  tempDirFor,
  type ServerProcess,
} from './support.js';
import { StoreUnavailableError } from './package.js';

const KEY = 'logging-key-0123456789abcdef';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const temp = (t: TestContext): Promise<string> => tempDirFor(t, 'petstore-log-');

async function serve(t: TestContext, args: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<ServerProcess> {
  return spawnServerFor(t, ['--data-dir', await temp(t), ...args], { PETSTORE_API_KEYS: KEY, ...env });
}

const stop = (server: ServerProcess): Promise<number | null> => stopProcess(server);

type LogLine = Record<string, unknown>;

function lines(stdout: string): LogLine[] {
  return stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => {
      try {
        return JSON.parse(l) as LogLine;
      } catch {
        assert.fail(`a stdout line that is not JSON: ${l}`);
      }
    });
}

const requestLines = (stdout: string): LogLine[] => lines(stdout).filter((l) => l.msg === 'request');

/** The log line is written after the response; wait for it. */
async function logLineFor(server: ServerProcess, id: string): Promise<LogLine> {
  const deadline = Date.now() + 3000;
  for (;;) {
    const found = requestLines(server.stdout()).filter((l) => l.id === id);
    if (found.length > 0) {
      assert.equal(found.length, 1, `one line for request ${id}`);
      return found[0] as LogLine;
    }
    if (Date.now() > deadline) assert.fail(`no log line for request ${id}:\n${server.stdout()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('each request is one JSON line on stdout with time, id, method, path, status and ms', async (t) => {
  const server = await serve(t);
  const get = await request(server.url, 'GET', '/v1/pets?limit=5', {
    auth: KEY,
    headers: [['x-request-id', 'client-id-1']],
  });
  assert.equal(get.status, 200);
  const line = await logLineFor(server, 'client-id-1');
  assert.equal(line.method, 'GET');
  assert.equal(line.path, '/v1/pets');
  assert.equal(line.status, 200);
  assert.equal(typeof line.ms, 'number');
  assert.ok((line.ms as number) >= 0);
  assert.equal(typeof line.time, 'string');
  assert.ok(
    Math.abs(Date.parse(line.time as string) - Date.now()) < 60_000,
    `time is an ISO date of now: ${String(line.time)}`,
  );

  const post = await request(server.url, 'POST', '/v1/pets', {
    auth: KEY,
    headers: [
      ['x-request-id', 'client-id-2'],
      ['content-type', 'application/json'],
    ],
    body: '{"name":"Rex","categoryId":1}',
  });
  assert.equal(post.status, 201);
  const created = await logLineFor(server, 'client-id-2');
  assert.equal(created.method, 'POST');
  assert.equal(created.status, 201);

  await request(server.url, 'GET', '/v1/nowhere', { auth: KEY, headers: [['x-request-id', 'client-id-3']] });
  assert.equal((await logLineFor(server, 'client-id-3')).status, 404);
  await request(server.url, 'GET', '/v1/pets', { auth: false, headers: [['x-request-id', 'client-id-4']] });
  assert.equal((await logLineFor(server, 'client-id-4')).status, 401);

  assert.equal(await stop(server), 0);
  assert.equal(requestLines(server.stdout()).length, 4, 'exactly one line per request');
});

test('the logged path never carries the query string', async (t) => {
  const server = await serve(t);
  const res = await request(server.url, 'GET', '/v1/pets?api_key=secret-in-query&limit=2', {
    auth: KEY,
    headers: [['x-request-id', 'query-id']],
  });
  assert.equal(res.status, 200);
  const line = await logLineFor(server, 'query-id');
  assert.equal(line.path, '/v1/pets');
  await request(server.url, 'GET', '/v1/pets/1?api_key=secret-in-query', { auth: KEY });
  await request(server.url, 'GET', '/healthz?api_key=secret-in-query');
  assert.equal(await stop(server), 0);
  assert.ok(!server.stdout().includes('secret-in-query'));
  assert.ok(!server.stderr().includes('secret-in-query'));
  assert.ok(!server.stdout().includes('api_key'));
});

test('a plain X-Request-Id is echoed and logged; otherwise a UUID is generated, returned and logged', async (t) => {
  const server = await serve(t);
  const echoed = await request(server.url, 'GET', '/v1/pets', {
    auth: KEY,
    headers: [['x-request-id', 'abc-123_x.y:z']],
  });
  assert.equal(echoed.headers['x-request-id'], 'abc-123_x.y:z');
  await logLineFor(server, 'abc-123_x.y:z');

  const generated = await request(server.url, 'GET', '/v1/pets', { auth: KEY });
  const id = generated.headers['x-request-id'];
  assert.equal(typeof id, 'string');
  assert.match(id as string, UUID);
  await logLineFor(server, id as string);

  for (const unfit of ['has space', 'x'.repeat(500), 'quote"and\\backslash', '']) {
    const res = await request(server.url, 'GET', '/v1/pets', { auth: KEY, headers: [['x-request-id', unfit]] });
    const returned = res.headers['x-request-id'] as string;
    assert.match(returned, UUID, `"${unfit.slice(0, 20)}" is replaced by a generated id`);
    await logLineFor(server, returned);
  }
  const unauthorized = await request(server.url, 'GET', '/v1/pets', { auth: false });
  assert.match(unauthorized.headers['x-request-id'] as string, UUID, 'errors carry a request id too');
  await logLineFor(server, unauthorized.headers['x-request-id'] as string);

  assert.equal(await stop(server), 0);
  assert.ok(!server.stdout().includes('has space'));
  assert.ok(!server.stdout().includes('x'.repeat(500)));
});

test('--log-level error writes no request lines', async (t) => {
  const dir = await temp(t);
  // The server logs no "listening" line at this level: it gets a known port and is polled.
  const server = await spawnQuietServerFor(t, ['--data-dir', dir, '--log-level', 'error'], { PETSTORE_API_KEYS: KEY });
  const url = server.url;
  assert.equal((await request(url, 'GET', '/v1/pets', { auth: KEY })).status, 200);
  assert.equal((await request(url, 'GET', '/v1/pets', { auth: false })).status, 401);
  assert.equal((await request(url, 'GET', '/v1/nowhere', { auth: KEY })).status, 404);
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(await stopProcess(server), 0);
  assert.deepEqual(requestLines(server.stdout()), [], server.stdout());
  assert.doesNotMatch(server.stdout() + server.stderr(), /"msg":"request"/);
});

test('--log-level info with the same requests does write request lines (the level above is what silences them)', async (t) => {
  const server = await serve(t, ['--log-level', 'info']);
  const res = await request(server.url, 'GET', '/v1/pets', { auth: KEY });
  await logLineFor(server, res.headers['x-request-id'] as string);
  assert.equal(await stop(server), 0);
});

test('no key and no Authorization header ever reaches stdout or stderr', async (t) => {
  const server = await serve(t);
  const wrongKey = 'wrong-key-that-must-not-be-logged-42';
  const bodyKey = 'key-in-body-not-logged-77';
  const attempts: Array<{
    headers: Array<[string, string]>;
    auth: boolean | string;
    path?: string;
    method?: string;
    body?: string;
  }> = [
    { headers: [], auth: KEY },
    { headers: [], auth: wrongKey },
    { headers: [['authorization', `Basic ${Buffer.from(`user:${wrongKey}`).toString('base64')}`]], auth: false },
    { headers: [['authorization', `bearer ${KEY}`]], auth: false },
    {
      headers: [
        ['authorization', `Bearer ${KEY}`],
        ['authorization', `Bearer ${wrongKey}`],
      ],
      auth: false,
    },
    { headers: [['authorization', `Bearer ${KEY} extra`]], auth: false },
    { headers: [], auth: KEY, path: '/v1/pets/abc' },
    { headers: [], auth: wrongKey, path: '/v1/nowhere' },
    {
      headers: [['content-type', 'application/json']],
      auth: KEY,
      method: 'POST',
      body: `{"name":"${bodyKey}","categoryId":1,"extra":"${wrongKey}"}`,
    },
  ];
  for (const a of attempts) {
    const options =
      a.body === undefined ? { headers: a.headers, auth: a.auth } : { headers: a.headers, auth: a.auth, body: a.body };
    await request(server.url, a.method ?? 'GET', a.path ?? '/v1/pets', options);
  }
  assert.equal(await stop(server), 0);
  const output = server.stdout() + server.stderr();
  assert.ok(requestLines(server.stdout()).length >= attempts.length, 'the requests were logged');
  for (const secret of [KEY, wrongKey, Buffer.from(`user:${wrongKey}`).toString('base64'), bodyKey]) {
    assert.ok(!output.includes(secret), `"${secret}" is not in the output`);
  }
  assert.doesNotMatch(output, /authorization/i);
  assert.doesNotMatch(output, /bearer/i);
});

test('/healthz and /readyz answer without a key, hold no pet data and are outside /v1', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const created = await server.request('POST', '/v1/pets', {
    headers: [['content-type', 'application/json']],
    body: '{"name":"SecretPetName","categoryId":99}',
  });
  assert.equal(created.status, 201);
  for (const path of ['/healthz', '/readyz']) {
    const res = await server.request('GET', path, { auth: false });
    assert.equal(res.status, 200, path);
    assert.match(String(res.headers['content-type']), /^application\/json/);
    assert.ok(!res.text.includes('SecretPetName'), `${path} says nothing about pets`);
    assert.ok(!/"id"|categoryId|"name"/.test(res.text), `${path}: ${res.text}`);
    const withBadKey = await server.request('GET', path, { auth: 'not-a-key' });
    assert.equal(withBadKey.status, 200, `${path} ignores a wrong key`);
    const underV1 = await server.request('GET', `/v1${path}`);
    assert.equal(underV1.status, 404, `/v1${path} does not exist`);
  }
});

test('/readyz is 503 once the store is closed, without an error logged for each probe; /healthz stays 200', async (t) => {
  const dir = await temp(t);
  const errors: string[] = [];
  const server = await startServer({
    dataDir: dir,
    logger: { request() {}, info() {}, error: (message) => errors.push(message) },
  });
  t.after(() => server.stop());
  // Close only the store, leaving the HTTP server up, as when the store has failed.
  await server.running.petstore.close();
  assert.equal((await server.request('GET', '/readyz', { auth: false })).status, 503);
  assert.equal((await server.request('GET', '/readyz', { auth: false })).status, 503);
  assert.equal((await server.request('GET', '/healthz', { auth: false })).status, 200);
  assert.deepEqual(errors, [], 'a deliberate 503 is an answer, not a failure to log');
});

test('request lines are gathered into one write, at most 10 ms later; other lines go out at once, after them', async (t) => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const writes: string[] = [];
  const errors: string[] = [];
  const logger = jsonLogger(
    'info',
    { write: (text: string) => writes.push(text) },
    { write: (text: string) => errors.push(text) },
  );
  const entry = { id: 'a', method: 'GET', path: '/v1/pets', status: 200, ms: 0.25 };
  logger.request(entry);
  logger.request({ ...entry, id: 'b' });
  assert.deepEqual(writes, [], 'nothing is written synchronously');
  t.mock.timers.tick(9);
  assert.deepEqual(writes, [], 'nothing is written before 10 ms');
  t.mock.timers.tick(1);
  assert.equal(writes.length, 1, 'two request lines, one write, at 10 ms');
  assert.deepEqual(
    lines(String(writes[0])).map((l) => l.id),
    ['a', 'b'],
  );

  logger.request({ ...entry, id: 'c' });
  logger.info('stopping', { signal: 'SIGTERM' });
  assert.equal(writes.length, 2, 'the event is written at once, with what was gathered');
  assert.deepEqual(
    lines(String(writes[1])).map((l) => l.id ?? l.msg),
    ['c', 'stopping'],
  );
  logger.request({ ...entry, id: 'd' });
  logger.error('failed', new Error('boom'));
  assert.deepEqual(
    lines(String(writes[2])).map((l) => l.id),
    ['d'],
    'stdout is written before stderr',
  );
  assert.equal(lines(errors.join(''))[0]?.msg, 'failed');
  t.mock.timers.tick(60);
  assert.equal(writes.length, 3, 'no empty write when the timer finds nothing gathered');
});

test('request lines are written as soon as about 64 KiB wait, counting long paths, before the 10 ms are up', async () => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  const writes: string[] = [];
  const logger = jsonLogger('info', { write: (text: string) => writes.push(text) }, { write: () => {} });
  const entry = { id: 'a', method: 'GET', path: '/v1/pets', status: 200, ms: 0.25 };
  for (let i = 0; i < 100; i++) logger.request(entry);
  assert.deepEqual(writes, [], '100 short lines wait for the timer');
  logger.flush();
  assert.equal(writes.length, 1);
  const long = { ...entry, path: `/v1/${'x'.repeat(16 * 1024)}` };
  for (let i = 0; i < 8; i++) logger.request(long);
  assert.equal(writes.length, 3, 'four 16 KiB paths make one write at once; the next four another');
  assert.deepEqual([lines(String(writes[1])).length, lines(String(writes[2])).length], [4, 4]);
  logger.flush();
  assert.equal(writes.length, 3, 'nothing was left waiting');
});

test('a stream is handed the gathered request lines as bytes, a copy of them, and the lines after them in order', async () => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  const chunks: Array<Buffer | string> = [];
  const out = new Writable({
    decodeStrings: false,
    write(chunk: Buffer | string, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  const logger = jsonLogger('info', out, { write: () => {} });
  const entry = { id: 'a', method: 'GET', path: '/v1/pets', status: 200, ms: 0.25 };
  logger.request(entry);
  logger.request({ ...entry, id: 'ü-not-ascii' }); // the text path, into the same bytes
  logger.info('stopping');
  logger.request({ ...entry, id: 'b' });
  logger.flush();
  assert.ok(Buffer.isBuffer(chunks[0]), 'the lines went out as bytes');
  assert.equal(typeof chunks[1], 'string', 'the information line after them as text');
  const text = chunks.map((c) => String(c)).join('');
  assert.deepEqual(
    lines(text).map((l) => l.id ?? l.msg),
    ['a', 'ü-not-ascii', 'stopping', 'b'],
  );
  assert.equal(String(chunks[0]).split('\n').length, 3, 'the first write held the first two lines, whole');
  // The logger reuses its buffer: what it handed out must not change under the stream.
  const first = String(chunks[0]);
  for (let i = 0; i < 50; i++) logger.request({ ...entry, id: `later-${i}` });
  logger.flush();
  assert.equal(String(chunks[0]), first, "a chunk handed to the stream is the logger's no more");

  // A stream of objects takes what it is given as it is: it gets the lines as text, as any other sink.
  const objects: unknown[] = [];
  const objectStream = new Writable({
    objectMode: true,
    write(chunk: unknown, _encoding, done) {
      objects.push(chunk);
      done();
    },
  });
  const objectLogger = jsonLogger('info', objectStream, { write: () => {} });
  objectLogger.request(entry);
  objectLogger.flush();
  assert.equal(typeof objects[0], 'string');
  assert.equal(lines(objects[0] as string)[0]?.id, 'a');
});

test('a stream that logs from its write, or throws, is not handed the same request lines twice', async () => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  const entry = { id: 'one', method: 'GET', path: '/v1/pets', status: 200, ms: 0.25 };
  let text = '';
  let logger: ReturnType<typeof jsonLogger> | undefined;
  const echoing = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += String(chunk);
      if (String(chunk).includes('"id":"one"')) logger?.info('wrote a chunk');
      done();
    },
  });
  logger = jsonLogger('info', echoing, { write: () => {} });
  logger.request(entry);
  logger.flush();
  assert.deepEqual(
    lines(text).map((l) => l.id ?? l.msg),
    ['one', 'wrote a chunk'],
  );

  let attempts = 0;
  const failing = new Writable({
    write(_chunk, _encoding, done) {
      attempts++;
      done(new Error('disk gone'));
    },
  });
  failing.on('error', () => {});
  const throwing = {
    write: () => {
      attempts++;
      throw new Error('sink gone');
    },
  };
  for (const out of [failing, throwing]) {
    attempts = 0;
    const failingLogger = jsonLogger('info', out as unknown as Writable, { write: () => {} });
    failingLogger.request(entry);
    try {
      failingLogger.flush();
    } catch (error) {
      assert.equal((error as Error).message, 'sink gone');
    }
    failingLogger.error('after the failure'); // flushes first: nothing is left to write again
    failingLogger.flush();
    assert.equal(attempts, 1, 'the lines were handed over once');
  }
});

test('a request line too long to wait goes out at once, whole, after the lines waiting before it', async () => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  const writes: string[] = [];
  const logger = jsonLogger('info', { write: (text: string) => writes.push(text) }, { write: () => {} });
  const entry = { id: 'a', method: 'GET', path: '/v1/pets', status: 200, ms: 0.25 };
  logger.request(entry);
  const huge = { ...entry, id: 'huge', path: `/v1/${'ü'.repeat(50 * 1024)}` };
  logger.request(huge);
  assert.equal(writes.length, 1, 'written at once, with the line waiting before it');
  const written = lines(String(writes[0]));
  assert.deepEqual(
    written.map((l) => l.id),
    ['a', 'huge'],
  );
  assert.equal(written[1]?.path, huge.path, 'not cut');
  logger.request({ ...entry, id: 'b' });
  logger.flush();
  assert.deepEqual(
    lines(String(writes[1])).map((l) => l.id),
    ['b'],
    'and the log goes on after it',
  );
});

test('a request line escapes what a client put in the path, and its time is the ISO time of the request', async () => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  let written = '';
  const logger = jsonLogger('info', { write: (text: string) => (written += text) }, { write: () => {} });
  const before = Date.now();
  for (const path of ['/v1/"quoted"', '/v1/back\\slash', '/v1/ctl\u0001\u007f', '/v1/ünï/\u2028'])
    logger.request({ id: 'x', method: 'GET', path, status: 404, ms: 1 });
  logger.flush();
  const after = Date.now();
  const parsed = lines(written);
  assert.deepEqual(
    parsed.map((l) => l.path),
    ['/v1/"quoted"', '/v1/back\\slash', '/v1/ctl\u0001\u007f', '/v1/ünï/\u2028'],
  );
  for (const l of parsed) {
    const time = Date.parse(l.time as string);
    assert.match(l.time as string, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    assert.ok(time >= before && time <= after, `${l.time as string} lies within the test`);
  }
});

test('request lines still gathered are written when the process exits, and when the service closes', async (t) => {
  // An embedder that calls process.exit right after logging must not lose the last lines.
  const script = `const { jsonLogger } = require(${JSON.stringify(resolve(SERVER_JS, '..', 'index.js'))});
const logger = jsonLogger();
logger.request({ id: 'last-one', method: 'GET', path: '/v1/pets', status: 200, ms: 1 });
process.exit(0);`;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  await new Promise((r) => child.once('close', r));
  assert.deepEqual(
    requestLines(stdout).map((l) => l.id),
    ['last-one'],
  );

  // createPetstore's close() flushes the logger it was given.
  const { createPetstore } = await import('#dist/service/create-petstore.js');
  const events: string[] = [];
  const logger = {
    request: () => events.push('request'),
    info: () => {},
    error: () => {},
    flush: () => events.push('flush'),
  };
  const petstore = await createPetstore({ dataDir: await temp(t), keys: [KEY], logger });
  await petstore.close();
  assert.deepEqual(events, ['flush']);
});

test('a request line writes ms exactly as JavaScript writes the number', async () => {
  const { milliseconds } = await import('#dist/lib/request-log-line.js');
  for (let hundredths = 0; hundredths <= 200_000; hundredths++) {
    const ms = Math.round(hundredths) / 100;
    assert.equal(milliseconds(ms), String(ms), `${hundredths} hundredths`);
  }
  let seed = 7;
  for (let i = 0; i < 200_000; i++) {
    seed = (seed * 48271) % 2147483647;
    const ms = Math.round((seed / 2147483647) * 2 ** (seed % 47)) / 100; // up to 2^46 hundredths, every scale
    assert.equal(milliseconds(ms), String(ms), `${ms}`);
  }
  for (const ms of [1e21, 123456789.12, 0.125, 1 / 3, 2 ** 53, 77923018788499.6, -1.5, Number.MAX_VALUE])
    assert.equal(milliseconds(ms), String(ms));
});

test("an embedder's logger without warn gets the service's warnings at error; one with warn gets them there", async () => {
  const { serviceLogger } = await import('#dist/lib/logger.js');
  const lines: string[] = [];
  const plain = {
    request: () => lines.push('request'),
    info: (msg: string) => lines.push(`info ${msg}`),
    error: (msg: string, error: unknown, fields?: Record<string, unknown>) =>
      lines.push(`error ${msg} ${String(error)} ${JSON.stringify(fields)}`),
  };
  const wrapped = serviceLogger(plain);
  wrapped.warn('behind', { lagSeconds: 12 });
  wrapped.info('started');
  assert.deepEqual(lines, ['error behind undefined {"lagSeconds":12}', 'info started']);
  assert.equal(wrapped.flush, undefined, 'no flush is made up');
  const warning = { ...plain, warn: (msg: string) => lines.push(`warn ${msg}`) };
  assert.equal(serviceLogger(warning), warning, 'used as it is');
});

test('a 503 of a store that cannot be used logs one line, no stack; an unexpected failure logs its stack', async (t) => {
  const { jsonLogger } = await import('#dist/lib/logger.js');
  const errors: string[] = [];
  const logger = jsonLogger('error', { write: () => {} }, { write: (text: string) => errors.push(text) });
  const disk = Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' });
  const store = {
    ready: true,
    list: () => Promise.reject(new StoreUnavailableError('the store is closing', { operation: 'read' })),
    get: () => Promise.reject(new TypeError('a bug in the store')),
    create: () =>
      Promise.reject(new StoreUnavailableError('storage is failing; the pet was not stored', { cause: disk })),
    close: async () => {},
  };
  const server = await startServer({ dataDir: await temp(t), store, logger });
  t.after(() => server.stop());
  const body = JSON.stringify({ name: 'Rex', categoryId: 1 });
  const headers: Array<[string, string]> = [['content-type', 'application/json']];
  assert.equal((await server.request('POST', '/v1/pets', { body, headers })).status, 503);
  assert.equal((await server.request('GET', '/v1/pets')).status, 503);
  assert.equal((await server.request('GET', '/v1/pets/1')).status, 500);
  const failed = lines(errors.join('')).filter((l) => l.msg === 'request failed');
  assert.deepEqual(
    failed.map((l) => [l.method, l.path]),
    [
      ['POST', '/v1/pets'],
      ['GET', '/v1/pets'],
      ['GET', '/v1/pets/:petId'],
    ],
  );
  const [create, list, get] = failed.map((l) => String(l.error));
  assert.equal(create, 'storage is failing; the pet was not stored (EIO)', 'the code of its cause, on one line');
  assert.equal(list, 'the store is closing', 'its message alone when nothing has a code');
  assert.match(get ?? '', /^TypeError: a bug in the store\n\s+at /, 'the unexpected keeps its stack');
});
