/**
 * Hostile and heavy clients: repeated headers, `Expect: 100-continue`, Node's own 431 and 408,
 * slow and idle connections, the connection cap, repeated bad keys from one address, and a
 * sustained mixed load. Loopback only; every wait is bounded.
 */
import assert from 'node:assert/strict';
import { Agent, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect, type Socket } from 'node:net';
import { after, test, type TestContext } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseExact, parseResponse, RawClient } from './fuzz-corpus.js';
import {
  embedServer,
  request,
  startServer,
  tempDirFor,
  TEST_KEY,
  waitFor,
  within,
  type TestServer,
} from './support.js';
import { createPetstore, silentLoggerForTests } from './package.js';

const JSON_TYPE: [string, string] = ['content-type', 'application/json'];

/** Servers started by a test are closed even when it fails half-way. */
const servers: TestServer[] = [];
async function serve(options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  const server = await startServer(options);
  servers.push(server);
  return server;
}
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
});

interface ErrorBody {
  code: string;
  message: string;
  status: number;
}

function assertError(
  status: number,
  headers: IncomingHttpHeaders | Record<string, string | undefined>,
  text: string,
  expectedStatus: number,
  code?: string,
): ErrorBody {
  assert.equal(status, expectedStatus, text);
  assert.equal(headers['content-type'], 'application/json');
  assert.equal(headers['x-content-type-options'], 'nosniff');
  assert.equal(headers['cache-control'], 'no-store');
  const body = JSON.parse(text) as ErrorBody;
  assert.deepEqual(Object.keys(body).sort(), ['code', 'message', 'status']);
  assert.equal(body.status, expectedStatus);
  assert.equal(typeof body.message, 'string');
  if (code !== undefined) assert.equal(body.code, code);
  return body;
}

/** A raw TCP connection that records everything the server sends, for tests that pace their bytes. */
class Wire {
  readonly socket: Socket;
  data = '';
  closed = false;
  readonly opened: Promise<void>;
  readonly ended: Promise<void>;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.setNoDelay(true);
    this.socket.on('data', (chunk: Buffer) => (this.data += chunk.toString('latin1')));
    this.socket.on('error', () => {}); // a reset is a close; what was received is in `data`
    this.opened = new Promise((resolve, reject) => {
      this.socket.once('connect', () => resolve());
      this.socket.once('error', reject);
    });
    this.ended = new Promise((resolve) =>
      this.socket.once('close', () => {
        this.closed = true;
        resolve();
      }),
    );
  }

  write(text: string | Buffer): void {
    this.socket.write(text);
  }

  /** Waits until `predicate(data)` holds, checked at each chunk; false when the connection closed or `ms` passed first. */
  until(predicate: (data: string) => boolean, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const settle = (): void => {
        clearTimeout(timer);
        this.socket.off('data', check).off('close', check);
        resolve(predicate(this.data));
      };
      // The constructor's listeners run first: `data` and `closed` are up to date when this one runs.
      const check = (): void => {
        if (predicate(this.data) || this.closed) settle();
      };
      const timer = setTimeout(settle, ms);
      this.socket.on('data', check).on('close', check);
      check();
    });
  }

  destroy(): void {
    this.socket.destroy();
  }
}

/** The final answer in raw response text (interim 1xx skipped), parsed. */
function finalAnswer(
  data: string,
): { status: number; headers: Record<string, string>; body: string; interim: number[] } | undefined {
  const parsed = parseResponse(Buffer.from(data, 'latin1'), true, false);
  if (parsed === undefined) return undefined;
  const headers: Record<string, string> = {};
  for (const [name, values] of Object.entries(parsed.answer.headers)) headers[name] = values.join(', ');
  return {
    status: parsed.answer.status,
    headers,
    body: parsed.answer.body.toString('utf8'),
    interim: parsed.answer.interim,
  };
}

const hasFinal = (data: string): boolean => {
  const answer = finalAnswer(data);
  return (
    answer !== undefined &&
    (answer.headers['content-length'] === undefined ||
      Buffer.byteLength(answer.body) >= Number(answer.headers['content-length']))
  );
};

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  text: string;
}

/** One HTTP request with a chosen local address and agent. */
function call(
  url: string,
  options: {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    localAddress?: string;
    agent?: Agent | false;
  } = {},
): Promise<Reply> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const headers = {
      ...options.headers,
      ...(options.body === undefined ? {} : { 'content-length': String(Buffer.byteLength(options.body)) }),
    };
    const req = httpRequest(
      {
        host: hostname,
        port,
        method: options.method ?? 'GET',
        path: options.path ?? '/v1/pets',
        headers,
        agent: options.agent ?? false,
        ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            rawHeaders: res.rawHeaders,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      },
    );
    req.setTimeout(10_000, () => req.destroy(new Error('no answer in 10 s')));
    req.on('error', reject);
    if (options.body !== undefined) req.write(options.body);
    req.end();
  });
}

const AUTH = { authorization: `Bearer ${TEST_KEY}` };

// ---------------------------------------------------------------------------------------------
// Repeated headers

test('two Authorization headers are a 400 Error, whatever their values and spelling', async () => {
  const server = await serve();
  const pairs: Array<Array<[string, string]>> = [
    [['authorization', `Bearer ${TEST_KEY}`]],
    [['Authorization', 'Bearer wrong']],
    [['AUTHORIZATION', '']],
    [['authorization', 'Basic dGVzdDp0ZXN0']],
  ];
  for (const headers of pairs) {
    const res = await server.request('GET', '/v1/pets', { headers });
    assertError(res.status, res.headers, res.text, 400, 'invalid_request');
    // A create with two keys is refused the same way, and stores nothing.
    const created = await server.request('POST', '/v1/pets', {
      headers: [...headers, JSON_TYPE],
      body: '{"name":"Rex","categoryId":1}',
    });
    assertError(created.status, created.headers, created.text, 400, 'invalid_request');
  }
  // Both before the valid one, and no valid one at all.
  const invalidFirst = await server.request('GET', '/v1/pets', {
    auth: false,
    headers: [
      ['authorization', 'Bearer wrong'],
      ['authorization', `Bearer ${TEST_KEY}`],
    ],
  });
  assertError(invalidFirst.status, invalidFirst.headers, invalidFirst.text, 400, 'invalid_request');
  const raw = await new RawClient(server.url).exchange(
    Buffer.from(
      `GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nauthorization: Bearer ${TEST_KEY}\r\nConnection: close\r\n\r\n`,
    ),
  );
  assert.equal(raw.kind, 'answer');
  if (raw.kind === 'answer') assert.equal(raw.answer.status, 400);
  const list = await server.request('GET', '/v1/pets');
  assert.equal(list.text, '[]');
});

test('two Content-Type headers on a create are a 400 Error (not 415, not 201), and nothing is stored', async () => {
  const server = await serve();
  for (const [first, second] of [
    ['application/json', 'application/json'],
    ['application/json', 'text/plain'],
    ['text/plain', 'application/json'],
    ['application/json', 'application/json; charset=utf-8'],
  ]) {
    const res = await server.request('POST', '/v1/pets', {
      headers: [
        ['content-type', first as string],
        ['Content-Type', second as string],
      ],
      body: '{"name":"Rex","categoryId":1}',
    });
    const error = assertError(res.status, res.headers, res.text, 400, 'invalid_request');
    assert.match(error.message, /Content-Type/);
  }
  const list = await server.request('GET', '/v1/pets');
  assert.equal(list.text, '[]');
});

/** A request head: Host, Authorization and `lead`, then `padding` short headers (`x0: 1` …), then `tail`; under 16 KiB. */
function paddedHead(method: string, lead: string, padding: number, tail: string): string {
  const pads = Array.from({ length: padding }, (_, i) => `x${i % 10}: 1\r\n`).join('');
  const head = `${method} /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_KEY}\r\n${lead}${pads}${tail}Connection: close\r\n\r\n`;
  assert.ok(head.length < 16 * 1024, `${head.length} bytes: within --max-header-size`);
  return head;
}

async function rawAnswer(
  url: string,
  bytes: string,
): Promise<{ status: number; headers: Record<string, string>; body: string }> {
  const outcome = await new RawClient(url).exchange(Buffer.from(bytes), { timeoutMs: 5000 });
  assert.equal(outcome.kind, 'answer');
  if (outcome.kind !== 'answer') throw new Error('no answer');
  return {
    status: outcome.answer.status,
    headers: Object.fromEntries(Object.entries(outcome.answer.headers).map(([k, v]) => [k, v.join(', ')])),
    body: outcome.answer.body.toString('utf8'),
  };
}

/** The pet store's handler on an embedder's own node:http server, with Node's header defaults. */
async function embedded(t: TestContext): Promise<string> {
  return embedServer(
    t,
    await createPetstore({ dataDir: await tempDirFor(t), keys: [TEST_KEY], logger: silentLoggerForTests }),
  );
}

test('a second Authorization, Host, Content-Type or Idempotency-Key behind 1,995 headers is refused, not dropped unseen; nothing is stored', async (t) => {
  const server = await serve();
  for (const url of [server.url, await embedded(t)]) {
    const body = '{"name":"Hidden","categoryId":1}';
    // The first of each is valid and comes before the padding; a proxy that takes the last one sees another request.
    const seconds = [
      'Authorization: Bearer another-key-0123456789\r\n',
      'Host: elsewhere.example\r\n',
      'Content-Type: text/plain\r\n',
      'Idempotency-Key: "b"\r\n',
    ];
    for (const second of seconds) {
      const lead = `Content-Type: application/json\r\nIdempotency-Key: "a"\r\nContent-Length: ${body.length}\r\n`;
      const head = paddedHead('POST', lead, 1995, second);
      const answer = await rawAnswer(url, head + body);
      assertError(answer.status, answer.headers, answer.body, 431, 'headers_too_large');
    }
    const list = await request(url, 'GET', '/v1/pets');
    assert.equal(list.text, '[]', 'nothing was stored');
  }
});

test('up to 999 headers are read, every one of them; 1,000 or more are a 431 even within --max-header-size', async (t) => {
  const server = await serve();
  for (const url of [server.url, await embedded(t)]) {
    // 999 in all (Host, Authorization, 996 more, Connection): served, and a second Authorization at the end is seen.
    const served = await rawAnswer(url, paddedHead('GET', '', 996, ''));
    assert.equal(served.status, 200, served.body);
    const twice = await rawAnswer(url, paddedHead('GET', '', 995, `Authorization: Bearer ${TEST_KEY}\r\n`));
    assertError(twice.status, twice.headers, twice.body, 400, 'invalid_request');
    for (const padding of [997, 1500, 2200]) {
      const refused = await rawAnswer(url, paddedHead('GET', '', padding, ''));
      const error = assertError(refused.status, refused.headers, refused.body, 431, 'headers_too_large');
      assert.match(error.message, /999/);
    }
  }
});

// ---------------------------------------------------------------------------------------------
// Expect: 100-continue — refusals go out before the client sends its body

function continueHead(headers: string, length: number): string {
  return `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\n${headers}Content-Length: ${length}\r\nExpect: 100-continue\r\n\r\n`;
}

async function refusedBeforeBody(
  server: TestServer,
  headers: string,
  length: number,
  status: number,
  code: string,
): Promise<void> {
  const wire = new Wire(server.url);
  try {
    await wire.opened;
    wire.write(continueHead(headers, length)); // the body is never sent
    assert.ok(await wire.until(hasFinal, 3000), `no answer before the body: ${JSON.stringify(wire.data)}`);
    assert.doesNotMatch(wire.data, /^HTTP\/1\.1 100/, 'no 100 Continue for a request that will be refused');
    const answer = finalAnswer(wire.data);
    assert.ok(answer !== undefined);
    assertError(answer.status, answer.headers, answer.body, status, code);
  } finally {
    wire.destroy();
  }
}

test('Expect: 100-continue without a valid key: the 401 arrives before any body is sent', async () => {
  const server = await serve({ bodyLimit: 1024 });
  await refusedBeforeBody(server, 'Content-Type: application/json\r\n', 30, 401, 'unauthorized');
  await refusedBeforeBody(
    server,
    'Authorization: Bearer wrong\r\nContent-Type: application/json\r\n',
    30,
    401,
    'unauthorized',
  );
});

test('Expect: 100-continue with a Content-Length over the limit: the 413 arrives before any body is sent', async () => {
  const server = await serve({ bodyLimit: 1024 });
  await refusedBeforeBody(
    server,
    `Authorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n`,
    1025,
    413,
    'payload_too_large',
  );
  await refusedBeforeBody(
    server,
    `Authorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n`,
    10 * 1024 * 1024,
    413,
    'payload_too_large',
  );
});

test('Expect: 100-continue with Content-Type text/plain: the 415 arrives before any body is sent', async () => {
  const server = await serve({ bodyLimit: 1024 });
  await refusedBeforeBody(
    server,
    `Authorization: Bearer ${TEST_KEY}\r\nContent-Type: text/plain\r\n`,
    30,
    415,
    'unsupported_media_type',
  );
  await refusedBeforeBody(server, `Authorization: Bearer ${TEST_KEY}\r\n`, 30, 415, 'unsupported_media_type');
});

test('Expect: 100-continue on a valid create: 100 Continue first, then 201 once the body is sent', async () => {
  const server = await serve({ bodyLimit: 1024 });
  const body = Buffer.from('{"name":"Patient","categoryId":9223372036854775807}');
  const wire = new Wire(server.url);
  try {
    await wire.opened;
    wire.write(continueHead(`Authorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\n`, body.length));
    assert.ok(await wire.until((d) => d.includes('\r\n\r\n'), 3000), `no 100 Continue: ${JSON.stringify(wire.data)}`);
    assert.equal(wire.data, 'HTTP/1.1 100 Continue\r\n\r\n');
    await sleep(100);
    assert.equal(wire.data, 'HTTP/1.1 100 Continue\r\n\r\n', 'nothing but 100 Continue while the body is not sent');
    wire.write(body);
    assert.ok(await wire.until(hasFinal, 3000), `no final answer: ${JSON.stringify(wire.data)}`);
    const answer = finalAnswer(wire.data);
    assert.ok(answer !== undefined);
    assert.deepEqual(answer.interim, [100]);
    assert.equal(answer.status, 201, answer.body);
    assert.deepEqual(parseExact(answer.body), { id: 1, name: 'Patient', categoryId: '9223372036854775807' });
  } finally {
    wire.destroy();
  }
  const list = await server.request('GET', '/v1/pets');
  assert.equal(list.text, '[{"id":1,"name":"Patient","categoryId":9223372036854775807}]');
});

test('an Expect other than 100-continue is a 417 Error, and the body is never waited for', async () => {
  const server = await serve();
  const wire = new Wire(server.url);
  try {
    await wire.opened;
    wire.write(
      `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 30\r\nExpect: 200-ok\r\n\r\n`,
    );
    assert.ok(await wire.until(hasFinal, 3000), `no answer: ${JSON.stringify(wire.data)}`);
    const answer = finalAnswer(wire.data);
    assert.ok(answer !== undefined);
    assertError(answer.status, answer.headers, answer.body, 417);
  } finally {
    wire.destroy();
  }
});

// ---------------------------------------------------------------------------------------------
// Framing the service must not answer twice, and methods Node handles on its own

test('a broken chunked body after an early refusal gets that one answer, not a second response on the same connection', async () => {
  const server = await serve();
  for (const [head, status] of [
    ['Content-Type: application/json\r\n', 401], // refused for the key before the body is read
    [`Authorization: Bearer ${TEST_KEY}\r\nContent-Type: text/plain\r\n`, 415],
  ] as const) {
    const client = new RawClient(server.url);
    const outcome = await client.exchange(
      Buffer.from(
        `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${head}Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n`,
      ),
      { drainMs: 1000 },
    );
    client.close();
    assert.equal(outcome.kind, 'answer');
    if (outcome.kind !== 'answer') continue;
    // Either the early refusal alone, or Node's 400 for the broken chunk alone — never both.
    assert.ok([status, 400].includes(outcome.answer.status), `status ${outcome.answer.status}`);
    assert.equal(
      outcome.extra,
      0,
      `after the ${outcome.answer.status} the server sent ${outcome.extra} more bytes for the same request`,
    );
  }
});

test('CONNECT is answered with an Error, not a silently dropped connection', async () => {
  const server = await serve();
  for (const target of ['/v1/pets', '127.0.0.1:80']) {
    const client = new RawClient(server.url);
    const outcome = await client.exchange(
      Buffer.from(`CONNECT ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`),
      { timeoutMs: 3000 },
    );
    client.close();
    assert.equal(
      outcome.kind,
      'answer',
      `CONNECT ${target}: ${outcome.kind === 'answer' ? '' : `${outcome.kind} ${JSON.stringify(outcome.partial)}`}`,
    );
    if (outcome.kind !== 'answer') continue;
    assert.ok(
      outcome.answer.status >= 400 && outcome.answer.status < 500,
      `CONNECT ${target}: ${outcome.answer.status}`,
    );
    const headers = Object.fromEntries(Object.entries(outcome.answer.headers).map(([k, v]) => [k, v.join(', ')]));
    assertError(outcome.answer.status, headers, outcome.answer.body.toString('utf8'), outcome.answer.status);
  }
  const health = await server.request('GET', '/healthz', { auth: false });
  assert.equal(health.status, 200);
});

// ---------------------------------------------------------------------------------------------
// Node's own 431 and 408 reach the client as such

test("headers over maxHeaderSize get Node's 431, not another status", async () => {
  const server = await serve({ maxHeaderSize: 8192 });
  const client = new RawClient(server.url);
  const outcome = await client.exchange(
    Buffer.from(
      `GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nX-Pad: ${'a'.repeat(9000)}\r\n\r\n`,
    ),
  );
  client.close();
  assert.equal(outcome.kind, 'answer');
  if (outcome.kind === 'answer') assert.equal(outcome.answer.status, 431);
  // The same through Node's HTTP client, with many small headers instead of one big one.
  const padded = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-pad-${i}`, 'b'.repeat(100)]));
  const res = await call(server.url, { headers: { ...AUTH, ...padded } });
  assert.equal(res.status, 431);
  // Under the limit it is an ordinary request.
  const fine = await call(server.url, { headers: { ...AUTH, 'x-pad': 'c'.repeat(4000) } });
  assert.equal(fine.status, 200);
});

test("headers that do not complete within headersTimeout get Node's 408 within a few seconds", async (t) => {
  const server = await serve({ headersTimeout: 500, requestTimeout: 1000 });
  const wire = new Wire(server.url);
  try {
    await wire.opened;
    const started = Date.now();
    wire.write(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n`); // the blank line never comes
    const answered = await wire.until((d) => d.startsWith('HTTP/1.1 ') && d.includes('\r\n\r\n'), 5000);
    const ms = Date.now() - started;
    t.diagnostic(`answer after ${ms} ms: ${JSON.stringify(wire.data.slice(0, 40))}`);
    assert.ok(answered, `no answer within 5 s of a 500 ms headersTimeout (${ms} ms)`);
    assert.match(wire.data, /^HTTP\/1\.1 408 /);
    assert.ok(ms >= 400, `408 after ${ms} ms, before the headers timeout`);
    assert.ok(await wire.until(() => wire.closed, 2000), 'the connection is closed after the 408');
  } finally {
    wire.destroy();
  }
});

test("a body that stalls past requestTimeout gets Node's 408 within a few seconds, and nothing is stored", async (t) => {
  const server = await serve({ headersTimeout: 500, requestTimeout: 1000 });
  const wire = new Wire(server.url);
  try {
    await wire.opened;
    const started = Date.now();
    wire.write(
      `POST /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n{"name":"Slow",`,
    );
    const answered = await wire.until((d) => d.startsWith('HTTP/1.1 ') && d.includes('\r\n\r\n'), 5000);
    const ms = Date.now() - started;
    t.diagnostic(`answer after ${ms} ms: ${JSON.stringify(wire.data.slice(0, 40))}`);
    assert.ok(answered, `no answer within 5 s of a 1000 ms requestTimeout (${ms} ms)`);
    assert.match(wire.data, /^HTTP\/1\.1 408 /);
  } finally {
    wire.destroy();
  }
  const list = await server.request('GET', '/v1/pets');
  assert.equal(list.text, '[]');
});

// ---------------------------------------------------------------------------------------------
// Slow and idle clients, and the connection cap

const SLOW_CLIENTS = 300;

/** Opens `count` connections: odd ones send a request head one header byte every 200 ms, even ones stay silent. */
async function slowClients(url: string, count: number): Promise<{ wires: Wire[]; stop: () => void }> {
  const wires: Wire[] = [];
  for (let i = 0; i < count; i++) wires.push(new Wire(url));
  await Promise.all(wires.map((w) => w.opened));
  const trickling = wires.filter((_, i) => i % 2 === 1);
  for (const w of trickling)
    w.write(`GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\nX-Slow: `);
  const timer = setInterval(() => {
    for (const w of trickling) if (!w.closed) w.write('a');
  }, 200);
  return { wires, stop: () => clearInterval(timer) };
}

test(`a normal GET is answered promptly while ${SLOW_CLIENTS} slow and idle connections are held open`, async (t) => {
  const server = await serve({ headersTimeout: 5000, requestTimeout: 6000 });
  const { wires, stop } = await slowClients(server.url, SLOW_CLIENTS);
  try {
    await sleep(600); // a few header bytes from each slow client
    const started = performance.now();
    const res = await call(server.url, { headers: AUTH });
    const ms = Math.round(performance.now() - started);
    const open = wires.filter((w) => !w.closed).length;
    t.diagnostic(`GET /v1/pets answered in ${ms} ms with ${open} slow/idle connections open`);
    assert.equal(res.status, 200);
    assert.equal(open, SLOW_CLIENTS, 'the slow connections were all still held while the GET was served');
    assert.ok(ms < 2000, `GET took ${ms} ms`);
    // A create is served too, and what it stores is there.
    const created = await call(server.url, {
      method: 'POST',
      headers: { ...AUTH, 'content-type': 'application/json' },
      body: '{"name":"Quick","categoryId":1}',
    });
    assert.equal(created.status, 201, created.text);
  } finally {
    stop();
    for (const w of wires) w.destroy();
  }
});

test(`${SLOW_CLIENTS} slow and idle connections are closed by the headers timeout, each with a 408`, async (t) => {
  const headersTimeout = 1000;
  const server = await serve({ headersTimeout, requestTimeout: 2000 });
  const started = Date.now();
  const { wires, stop } = await slowClients(server.url, SLOW_CLIENTS);
  try {
    // Only the headers timeout closes them (they keep sending); the bound stops a hang on a busy machine.
    const deadline = headersTimeout + 30_000;
    const allClosed = Promise.all(wires.map((w) => w.ended));
    await within(allClosed, deadline, `all ${SLOW_CLIENTS} closed (headersTimeout ${headersTimeout} ms)`);
    const ms = Date.now() - started;
    const closed = wires.filter((w) => w.closed);
    const with408 = closed.filter((w) => w.data.startsWith('HTTP/1.1 408 ')).length;
    t.diagnostic(
      `after ${ms} ms: ${closed.length}/${SLOW_CLIENTS} closed by the server, ${with408} of them with a 408`,
    );
    assert.equal(with408, SLOW_CLIENTS);
  } finally {
    stop();
    for (const w of wires) w.destroy();
  }
  const res = await call(server.url, { headers: AUTH });
  assert.equal(res.status, 200);
});

test('with maxConnections 50, the oldest 10 of 60 silent sockets are closed by the server, a new client is served, and service resumes once they are released', async (t) => {
  const server = await serve({ maxConnections: 50 });
  const wires: Wire[] = [];
  try {
    for (let i = 0; i < 60; i++) {
      const wire = new Wire(server.url);
      await wire.opened;
      wires.push(wire);
    }
    await waitFor(() => wires.filter((w) => w.closed).length >= 10, 2000, '10 sockets closed');
    await sleep(200); // no more than 10 are closed
    const closed = wires.filter((w) => w.closed).length;
    const count = await new Promise<number>((resolve, reject) =>
      server.running.server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
    );
    t.diagnostic(`${closed} of 60 sockets closed by the server; it holds ${count}`);
    assert.equal(closed, 10);
    assert.equal(count, 50);
    assert.ok(
      wires.filter((w) => w.closed).every((w) => w.data === ''),
      'refused sockets get no bytes',
    );
    assert.ok(
      wires.slice(0, 10).every((w) => w.closed),
      'the oldest 10, which sent nothing, made room for the newer',
    );
    // At the cap, a new client with a request is served: the oldest silent socket makes room.
    assert.equal((await call(server.url, { headers: AUTH })).status, 200);
    await waitFor(() => wires[10]?.closed === true, 2000, 'the oldest silent socket closed for it');
  } finally {
    for (const w of wires) w.destroy();
  }
  const connections = (): Promise<number> =>
    new Promise((resolve, reject) => server.running.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
  await waitFor(async () => (await connections()) === 0, 3000, 'the released sockets are gone');
  const res = await call(server.url, { headers: AUTH });
  assert.equal(res.status, 200);
});

// ---------------------------------------------------------------------------------------------
// Repeated failed authentication

test('after 5 wrong keys the 6th request, even with a valid key, is a 429 with Retry-After; another address is unaffected', async () => {
  const server = await serve({ authFailureLimit: 5 });
  // Requests that present no bearer key at all (a browser's /favicon.ico, a misconfigured client)
  // are refused but are not guesses: they never block the address.
  for (const headers of [{}, { authorization: 'Basic dGVzdDp0ZXN0' }, { authorization: 'Bearer' }, {}, {}, {}]) {
    const res = await call(server.url, { headers, localAddress: '127.0.0.1' });
    assertError(res.status, res.headers, res.text, 401, 'unauthorized');
  }
  assert.equal((await call(server.url, { headers: AUTH, localAddress: '127.0.0.1' })).status, 200);
  const failures: Array<Record<string, string>> = [
    { authorization: 'Bearer wrong' },
    { authorization: 'bearer wrong2' },
    { authorization: 'Bearer x' },
    { authorization: 'Bearer y' },
    { authorization: `Bearer ${TEST_KEY}x` },
  ];
  for (const headers of failures) {
    const res = await call(server.url, { headers, localAddress: '127.0.0.1' });
    assertError(res.status, res.headers, res.text, 401, 'unauthorized');
  }
  for (const attempt of [{ method: 'GET' }, { method: 'POST', body: '{"name":"Blocked","categoryId":1}' }]) {
    const blocked = await call(server.url, {
      ...attempt,
      headers: { ...AUTH, 'content-type': 'application/json' },
      localAddress: '127.0.0.1',
    });
    assertError(blocked.status, blocked.headers, blocked.text, 429, 'too_many_requests');
    const retryAfter = blocked.rawHeaders.filter(
      (_, i) => i % 2 === 0 && blocked.rawHeaders[i]?.toLowerCase() === 'retry-after',
    ).length;
    assert.equal(retryAfter, 1, 'one Retry-After header');
    assert.match(String(blocked.headers['retry-after']), /^[1-9][0-9]*$/);
    const seconds = Number(blocked.headers['retry-after']);
    assert.ok(seconds >= 1 && seconds <= 60, `Retry-After ${seconds}`);
  }

  // 127.0.0.2 is another client on the loopback: its valid key works, its failures are its own.
  const other = await call(server.url, { headers: AUTH, localAddress: '127.0.0.2' });
  assert.equal(other.status, 200, other.text);
  const created = await call(server.url, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json' },
    body: '{"name":"Other","categoryId":2}',
    localAddress: '127.0.0.2',
  });
  assert.equal(created.status, 201, created.text);
  const otherFailure = await call(server.url, {
    headers: { authorization: 'Bearer wrong' },
    localAddress: '127.0.0.2',
  });
  assertError(otherFailure.status, otherFailure.headers, otherFailure.text, 401, 'unauthorized');
  const list = await call(server.url, { headers: AUTH, localAddress: '127.0.0.2' });
  assert.equal(list.text, '[{"id":1,"name":"Other","categoryId":2}]', 'the blocked create stored nothing');
});

// ---------------------------------------------------------------------------------------------
// Sustained load

function collectGarbage(): (() => void) | undefined {
  const existing = (globalThis as { gc?: () => void }).gc;
  if (typeof existing === 'function') return existing;
  try {
    setFlagsFromString('--expose-gc');
    return runInNewContext('gc') as () => void;
  } catch {
    return undefined;
  }
}

test('a sustained mixed load over keep-alive clients: no errors, every 201 stored, no memory growth', async (t) => {
  const server = await serve();
  // Bounded in requests, not in time: a busy machine makes it slower, never different.
  const REQUESTS = 600;
  const CLIENTS = 8;
  const gc = collectGarbage();
  const agent = new Agent({ keepAlive: true, maxSockets: CLIENTS });
  const created = new Map<number, string>();
  const ids: number[] = [];
  const errors: string[] = [];
  let requests = 0;
  let seed = 42;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed / 2147483648;
  };
  const measure = (): { heap: number; rss: number } => {
    gc?.();
    gc?.();
    const usage = process.memoryUsage();
    return { heap: usage.heapUsed, rss: usage.rss };
  };

  const started = Date.now();
  const samples: Array<{ heap: number; rss: number; requests: number; pets: number }> = [];
  let next = 0;
  const client = async (n: number): Promise<void> => {
    for (let issued = next++; issued < REQUESTS; issued = next++) {
      if (issued === REQUESTS / 3 || issued === (2 * REQUESTS) / 3)
        samples.push({ ...measure(), requests, pets: created.size });
      const roll = random();
      let res: Reply;
      try {
        if (roll < 0.3) {
          const body = `{"name":"load-${n}-${requests}","categoryId":${BigInt(Math.floor(random() * 2 ** 31)) * 4294967296n + BigInt(requests)},"status":"available"}`;
          res = await call(server.url, {
            method: 'POST',
            headers: { ...AUTH, 'content-type': 'application/json' },
            body,
            agent,
          });
          if (res.status === 201) {
            const pet = parseExact(res.text) as { id: number };
            created.set(pet.id, res.text);
            ids.push(pet.id);
          }
        } else if (roll < 0.8 || ids.length === 0) {
          const query = `limit=${1 + Math.floor(random() * 100)}${random() < 0.3 ? '&status=available' : ''}${random() < 0.5 ? `&after=${Math.floor(random() * (ids.length + 1))}` : ''}`;
          res = await call(server.url, { path: `/v1/pets?${query}`, headers: AUTH, agent });
        } else {
          const id = ids[Math.floor(random() * ids.length)] as number;
          res = await call(server.url, { path: `/v1/pets/${id}`, headers: AUTH, agent });
        }
        requests++;
        if (res.status >= 300) errors.push(`${res.status} ${res.text.slice(0, 100)}`);
      } catch (error) {
        errors.push(String(error));
      }
    }
  };
  await Promise.all(Array.from({ length: CLIENTS }, (_, n) => client(n)));
  agent.destroy();
  samples.push({ ...measure(), requests, pets: created.size });

  const [, second, last] = samples as [(typeof samples)[0], (typeof samples)[0], (typeof samples)[0]];
  const MiB = 1024 * 1024;
  const heapGrowth = last.heap - second.heap;
  const rssGrowth = last.rss - second.rss;
  const petsBetween = last.pets - second.pets;
  const requestsBetween = last.requests - second.requests;
  t.diagnostic(
    `${requests} requests in ${Date.now() - started} ms by ${CLIENTS} keep-alive clients, ${created.size} pets created, ${errors.length} errors, gc ${gc === undefined ? 'unavailable' : 'forced'}`,
  );
  t.diagnostic(
    `heapUsed ${samples.map((s) => (s.heap / MiB).toFixed(1)).join(' → ')} MiB; rss ${samples.map((s) => (s.rss / MiB).toFixed(1)).join(' → ')} MiB`,
  );
  t.diagnostic(
    `last third: ${requestsBetween} requests, ${petsBetween} pets, heap ${(heapGrowth / MiB).toFixed(2)} MiB, rss ${(rssGrowth / MiB).toFixed(2)} MiB`,
  );

  assert.deepEqual(errors.slice(0, 10), []);
  assert.equal(requests, REQUESTS, 'every request answered');
  assert.ok(created.size > 50, `only ${created.size} pets created`);

  // Stored pets legitimately take memory; anything per request beyond that is a leak.
  const allowance = 2 * MiB + petsBetween * 512;
  if (gc !== undefined)
    assert.ok(
      heapGrowth < allowance,
      `heap grew ${(heapGrowth / MiB).toFixed(1)} MiB over ${requestsBetween} requests (allowed ${(allowance / MiB).toFixed(1)})`,
    );
  assert.ok(
    rssGrowth < 64 * MiB + petsBetween * 4096,
    `rss grew ${(rssGrowth / MiB).toFixed(1)} MiB over ${requestsBetween} requests`,
  );

  // Every acknowledged pet is there, exactly as acknowledged.
  const listed = new Map<number, string>();
  let after = 0;
  for (;;) {
    const page = await request(server.url, 'GET', `/v1/pets?limit=100&after=${after}`);
    assert.equal(page.status, 200);
    const pets = parseExact(page.text) as Array<{ id: number }>;
    for (const pet of pets) listed.set(pet.id, JSON.stringify(pet));
    if (page.headers.link === undefined) break;
    after = (pets.at(-1) as { id: number }).id;
  }
  assert.equal(listed.size, created.size);
  for (const [id, text] of created) assert.equal(listed.get(id), JSON.stringify(parseExact(text)), `pet ${id}`);
});
