/**
 * What clients do to connections, plain and TLS: a reset at any point of any kind of connection
 * cannot end the server; a connection the server has answered with a close is closed by the server
 * (its slot and descriptor come back) whatever its client does; the stop is bounded by
 * --shutdown-timeout whatever clients do. Real servers (`node dist/server.js`), real resets
 * (SO_LINGER 0), loopback only; every wait is bounded.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { connect as netConnect, type Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { spawnServerFor, startServer, tempDirFor, waitFor, within, TEST_KEY, type ServerProcess } from './support.js';
import { certificate, needsOpenssl } from './tls-support.js';

const ENV = { PETSTORE_API_KEYS: TEST_KEY };

/** Plain HTTP, or TLS with a certificate made for the test. */
interface Transport {
  name: 'HTTP' | 'TLS';
  args: string[];
  ca: Buffer | undefined;
}

async function transports(t: TestContext): Promise<Transport[]> {
  const plain: Transport = { name: 'HTTP', args: [], ca: undefined };
  if ('skip' in needsOpenssl) return [plain];
  const { cert, key } = certificate(await tempDirFor(t, 'petstore-certs-'), 'server');
  return [plain, { name: 'TLS', args: ['--tls-cert', cert, '--tls-key', key], ca: await readFile(cert) }];
}

/**
 * A client connection that never closes its side first (allowHalfOpen, as a client that keeps its
 * socket open would): whatever closes it is the server, or the test through `reset()`.
 */
class Client {
  readonly raw: Socket;
  socket: Socket;
  data = '';
  closed = false;
  readonly ready: Promise<void>;

  constructor(url: string, ca: Buffer | undefined, tls = ca !== undefined) {
    const { hostname, port } = new URL(url);
    this.raw = netConnect({ port: Number(port), host: hostname, allowHalfOpen: true });
    this.raw.on('error', () => {}); // a reset or a cut is seen as `closed`
    this.raw.once('close', () => (this.closed = true));
    this.socket = this.raw;
    if (tls) {
      const options: ConnectionOptions & { allowHalfOpen: boolean } = {
        socket: this.raw,
        host: hostname,
        ca,
        allowHalfOpen: true,
      };
      this.socket = tlsConnect(options);
      this.socket.on('error', () => {});
    }
    this.socket.on('data', (chunk: Buffer) => (this.data += chunk.toString('latin1')));
    this.ready = new Promise((resolve, reject) => {
      this.socket.once(tls ? 'secureConnect' : 'connect', () => resolve());
      this.raw.once('close', () =>
        reject(new Error(`closed before it was open; received ${JSON.stringify(this.data)}`)),
      );
    });
  }

  write(bytes: string | Buffer): void {
    this.socket.write(bytes);
  }

  /** Waits for a whole response head, checked at each chunk; false when the connection closed or `ms` passed first. */
  answered(ms = 5000): Promise<boolean> {
    const head = (): boolean => /^HTTP\/1\.1 \d{3} [^\r\n]*\r\n(?:[^\r\n]+\r\n)*\r\n/.test(this.data);
    return new Promise((resolve) => {
      const settle = (): void => {
        clearTimeout(timer);
        this.socket.off('data', check);
        this.raw.off('close', check);
        resolve(head());
      };
      // The constructor's listeners run first: `data` and `closed` are up to date when this one runs.
      const check = (): void => {
        if (head() || this.closed) settle();
      };
      const timer = setTimeout(settle, ms);
      this.socket.on('data', check);
      this.raw.on('close', check);
      check();
    });
  }

  /** The answer's status, or 0 before one arrived. */
  status(): number {
    return Number(/^HTTP\/1\.1 (\d{3}) /.exec(this.data)?.[1] ?? 0);
  }

  /** A TCP reset (SO_LINGER 0): the server's next read or write on the connection fails with ECONNRESET. */
  reset(): void {
    this.raw.resetAndDestroy();
  }
}

async function open(url: string, ca: Buffer | undefined): Promise<Client> {
  const client = new Client(url, ca);
  await client.ready;
  return client;
}

/** A GET /healthz on a fresh connection: its status, or an error naming what happened. */
async function health(url: string, ca: Buffer | undefined): Promise<number> {
  const client = await open(url, ca);
  try {
    client.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.ok(await client.answered(), `no answer to GET /healthz: ${JSON.stringify(client.data)}`);
    return client.status();
  } finally {
    client.reset();
  }
}

const CREATE_HEAD = `POST /v1/pets HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TEST_KEY}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n`;

/**
 * Each kind of connection a client resets: what it sends, what it waits for before the reset (an
 * answer, the first bytes of one, or nothing), and what it sends after that. `raw`: plain TCP bytes
 * on the TLS port (a hello begun and never finished), with TLS only.
 */
interface ResetCase {
  name: string;
  send: string | Buffer;
  until: 'answer' | 'bytes' | 'nothing';
  followUp?: string;
  raw?: true;
}

const OWED_GET = `GET /v1/pets HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer ${TEST_KEY}\r\n\r\n`;
const CONNECT = 'CONNECT a:1 HTTP/1.1\r\nHost: a:1\r\n\r\n';

const RESETS: ResetCase[] = [
  { name: 'CONNECT, after its 405', send: CONNECT, until: 'answer' },
  { name: 'CONNECT, before its answer arrives', send: CONNECT, until: 'nothing' },
  {
    name: 'CONNECT followed by bytes for the tunnel',
    send: `${CONNECT}hello`,
    until: 'answer',
    followUp: 'more bytes for the tunnel',
  },
  { name: 'CONNECT behind a request whose answer is owed', send: OWED_GET + CONNECT, until: 'nothing' },
  {
    name: 'an Upgrade request',
    send: 'GET /v1/pets HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n',
    until: 'answer',
  },
  { name: 'a request the parser refuses, after its 400', send: 'GET / HTTP/1.1\r\nHost a\r\n\r\n', until: 'answer' },
  {
    name: 'a parse error behind a request whose answer is owed',
    send: `${OWED_GET}GET / HTTP/1.1\r\nHost a\r\n\r\n`,
    until: 'nothing',
  },
  {
    name: 'an Expect other than 100-continue, after its 417',
    send: 'POST /v1/pets HTTP/1.1\r\nHost: a\r\nExpect: foo\r\nContent-Length: 5\r\n\r\n',
    until: 'answer',
  },
  { name: 'a create with half its body', send: `${CREATE_HEAD}{"name":"Ha`, until: 'nothing' },
  { name: 'a response being received', send: 'GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n\r\n', until: 'bytes' },
  { name: 'an idle keep-alive connection', send: 'GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n', until: 'answer' },
  { name: 'a connection that sent nothing', send: '', until: 'nothing' },
  {
    name: 'half a TLS hello',
    send: Buffer.from([0x16, 0x03, 0x01, 0x00, 0x50, 0x01, 0x00]),
    until: 'nothing',
    raw: true,
  },
];

async function resetAfter(url: string, ca: Buffer | undefined, kind: ResetCase): Promise<void> {
  const c = new Client(url, ca, kind.raw !== true && ca !== undefined);
  await c.ready;
  if (kind.send.length > 0) c.write(kind.send);
  if (kind.until === 'answer') assert.ok(await c.answered(), `${kind.name}: an answer, not ${JSON.stringify(c.data)}`);
  if (kind.until === 'bytes')
    await waitFor(() => c.data.length > 0, 5000, `${kind.name}: the first bytes of the answer`);
  if (kind.followUp !== undefined) c.write(kind.followUp);
  await sleep(20);
  c.reset();
}

test("a client's reset at any point of any kind of connection does not end the server, over HTTP or TLS", {
  timeout: 120_000,
}, async (t) => {
  for (const transport of await transports(t)) {
    const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t), ...transport.args], ENV);
    for (const kind of RESETS) {
      if (kind.raw === true && transport.ca === undefined) continue;
      const what = `${transport.name}, ${kind.name}`;
      for (let i = 0; i < 3; i++) {
        await resetAfter(server.url, transport.ca, kind);
        await sleep(50); // the server meets the reset
        assert.equal(server.child.exitCode, null, `${what}: the server exited\n${server.stderr()}`);
      }
      assert.equal(await health(server.url, transport.ca), 200, what);
    }
    assert.doesNotMatch(server.stderr(), /Unhandled|ECONNRESET/);
  }
});

test('a reset on a socket an embedder takes from an upgrade listener does not end the process, over HTTP or TLS', async (t) => {
  const pairs: Array<{ cert: Buffer; key: Buffer } | undefined> = [undefined];
  if (!('skip' in needsOpenssl)) {
    const { cert, key } = certificate(await tempDirFor(t, 'petstore-certs-'), 'server');
    pairs.push({ cert: await readFile(cert), key: await readFile(key) });
  }
  for (const tls of pairs) {
    const server = await startServer({ tls });
    t.after(() => server.close());
    const taken: Socket[] = [];
    server.running.server.on('upgrade', (_req, socket: Socket) => taken.push(socket));
    const ca = tls === undefined ? undefined : tls.cert;
    const c = await open(server.url, ca);
    c.write('GET /chat HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
    await waitFor(() => taken.length === 1, 5000, 'the upgrade listener has the socket');
    c.reset();
    await waitFor(() => taken[0]?.destroyed === true, 5000, 'the taken socket sees the reset');
    assert.equal(await health(server.url, ca), 200);
  }
});

test('resets on a request in flight and on a CONNECT during the stop: it still finishes with exit 0', async (t) => {
  const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t)], ENV);
  const inFlight = await open(server.url, undefined);
  inFlight.write(CREATE_HEAD.replace('\r\n\r\n', '\r\nExpect: 100-continue\r\n\r\n'));
  await waitFor(() => inFlight.data.includes('100 Continue'), 5000, '100 Continue');
  const tunnel = await open(server.url, undefined);
  tunnel.write(CONNECT);
  assert.ok(await tunnel.answered());
  server.child.kill('SIGTERM');
  await waitFor(() => server.stdout().includes('"msg":"stopping"'), 5000, 'stopping');
  inFlight.reset();
  tunnel.reset();
  assert.equal(await within(server.exited, 15_000, 'exit after SIGTERM'), 0, server.stderr());
  assert.match(server.stdout(), /"msg":"stopped"/);
});

// ---------------------------------------------------------------------------------------------
// Connections the server has answered with a close

/** How many descriptors the process has open, or undefined without /proc. */
function descriptors(pid: number | undefined): number | undefined {
  return pid !== undefined && existsSync(`/proc/${pid}/fd`) ? readdirSync(`/proc/${pid}/fd`).length : undefined;
}

const SLOTS = 20;
const LIMITS = [
  '--max-connections',
  String(SLOTS),
  '--headers-timeout',
  '500',
  '--request-timeout',
  '1000',
  '--shutdown-timeout',
  '1000',
];

/** Connections the server answers with a close, each with what it sends and the answer it gets. */
const CLOSING: Array<{ name: string; status: number; send: string }> = [
  { name: 'CONNECT', status: 405, send: CONNECT },
  { name: 'a body that stalls past --request-timeout', status: 408, send: `${CREATE_HEAD}{"name":"Sl` },
  { name: 'a connection silent past --headers-timeout', status: 408, send: '' },
];

/** Fills every slot with connections of one kind, each answered, none closed by its client. */
async function fillSlots(server: ServerProcess, transport: Transport, send: string, status: number): Promise<Client[]> {
  const clients: Client[] = [];
  for (let i = 0; i < SLOTS; i++) {
    const client = await open(server.url, transport.ca);
    if (send !== '') client.write(send);
    clients.push(client);
  }
  for (const client of clients) {
    assert.ok(await client.answered(), `an answer: ${JSON.stringify(client.data)}`);
    assert.equal(client.status(), status);
  }
  return clients;
}

test(`connections answered with a close are closed by the server within seconds, whatever their clients do: at --max-connections ${SLOTS}, slots and descriptors come back`, {
  timeout: 120_000,
}, async (t) => {
  for (const transport of await transports(t)) {
    const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t), ...LIMITS, ...transport.args], ENV);
    const before = descriptors(server.child.pid);
    for (const kind of CLOSING) {
      const what = `${transport.name}, ${kind.name}`;
      const clients = await fillSlots(server, transport, kind.send, kind.status);
      const answered = performance.now();
      try {
        // The clients keep their side open (and a client that never writes again cannot tell a closed
        // connection from a half-closed one): the server's descriptors say whether it let go.
        if (before !== undefined) {
          await waitFor(
            () => (descriptors(server.child.pid) ?? 0) <= before,
            10_000,
            `${what}: the server closes all ${SLOTS} connections (descriptors back to ${before})`,
          );
          t.diagnostic(
            `${what}: all ${SLOTS} closed by the server ${Math.round(performance.now() - answered)} ms after their answers`,
          );
        } else {
          await sleep(5000); // no /proc: the slots are checked below, after the linger
        }
        assert.equal(await health(server.url, transport.ca), 200, `${what}: a new client is served`);
      } finally {
        for (const c of clients) c.reset();
      }
    }
  }
});

test('the stop finishes within --shutdown-timeout while every slot is held by clients that never close, over HTTP or TLS', {
  timeout: 120_000,
}, async (t) => {
  for (const transport of await transports(t)) {
    for (const kind of CLOSING) {
      const what = `${transport.name}, ${kind.name}`;
      const server = await spawnServerFor(t, ['--data-dir', await tempDirFor(t), ...LIMITS, ...transport.args], ENV);
      const clients = await fillSlots(server, transport, kind.send, kind.status);
      try {
        const started = performance.now();
        server.child.kill('SIGTERM');
        // --shutdown-timeout is 1 s: the bound leaves room for a loaded machine, not for waiting on clients.
        assert.equal(await within(server.exited, 10_000, `${what}: exit after SIGTERM`), 0, server.stderr());
        t.diagnostic(`${what}: exited ${Math.round(performance.now() - started)} ms after SIGTERM`);
      } finally {
        for (const c of clients) c.reset();
      }
    }
  }
  // Clients that never read the answers they asked for, and TLS handshakes begun and never finished.
  for (const transport of await transports(t)) {
    const server = await spawnServerFor(
      t,
      [
        '--data-dir',
        await tempDirFor(t),
        ...LIMITS,
        '--headers-timeout',
        '60000',
        '--request-timeout',
        '60000',
        ...transport.args,
      ],
      ENV,
    );
    const clients: Client[] = [];
    for (let i = 0; i < SLOTS / 2; i++) {
      const client = await open(server.url, transport.ca);
      client.socket.pause();
      client.write('GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n\r\n'.repeat(400));
      clients.push(client);
      const hello = new Client(server.url, undefined, false);
      await hello.ready;
      hello.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01]));
      clients.push(hello);
    }
    try {
      const started = performance.now();
      server.child.kill('SIGTERM');
      assert.equal(await within(server.exited, 10_000, `${transport.name}: exit after SIGTERM`), 0, server.stderr());
      t.diagnostic(
        `${transport.name}, unread answers and unfinished hellos: exited ${Math.round(performance.now() - started)} ms after SIGTERM`,
      );
    } finally {
      for (const c of clients) c.reset();
    }
  }
});
