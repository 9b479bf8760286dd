/**
 * The graceful stop, black-box over `node dist/server.js` (and `npm start`): signals during the
 * stop, silent connections, keep-alive clients that keep sending while the stop begins. Loopback
 * only; every wait is bounded.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { Agent, request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseResponse, type RawAnswer } from './fuzz-corpus.js';
import { request, spawnServerFor, tempDirFor, waitFor, type ServerProcess } from './support.js';
import { assertStopped } from './store-support.js';

const KEY = 'stopping-key-0123456789';
const ENV = { PETSTORE_API_KEYS: KEY };
const PET = (name: string): string => JSON.stringify({ name, categoryId: 1 });

/** A raw keep-alive connection that records what the server sends. */
class Wire {
  readonly socket: Socket;
  data = Buffer.alloc(0);
  ended = false;
  readonly connected: Promise<void>;

  constructor(url: string) {
    const { hostname, port } = new URL(url);
    this.socket = connect(Number(port), hostname);
    this.socket.on('data', (chunk: Buffer) => (this.data = Buffer.concat([this.data, chunk])));
    this.socket.on('error', () => {}); // a reset shows as `ended` with what arrived
    this.socket.on('close', () => (this.ended = true));
    this.connected = new Promise((r) => this.socket.once('connect', () => r()));
  }

  /** The final answers received so far (interim 1xx skipped). */
  answers(): RawAnswer[] {
    const answers: RawAnswer[] = [];
    for (let rest = this.data; rest.length > 0; ) {
      const parsed = parseResponse(rest, false, false);
      if (parsed === undefined) break;
      answers.push(parsed.answer);
      rest = rest.subarray(parsed.used);
    }
    return answers;
  }
}

function createHead(body: string, extra = ''): string {
  return `POST /v1/pets HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n${extra}\r\n`;
}

/** Starts a create that stays in flight: its headers (Expect: 100-continue) are in, its body is not. */
async function createInFlight(url: string, body: string): Promise<Wire> {
  const wire = new Wire(url);
  await wire.connected;
  wire.socket.write(createHead(body, 'Expect: 100-continue\r\n'));
  await waitFor(() => wire.data.toString('latin1').includes('100 Continue'), 5000, '100 Continue');
  return wire;
}

const exitOf = (server: ServerProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> =>
  server.exited.then(() => ({ code: server.child.exitCode, signal: server.child.signalCode }));

async function listAll(url: string): Promise<Array<{ id: number; name: string }>> {
  const pets: Array<{ id: number; name: string }> = [];
  for (let after = 0; ; ) {
    const page = await request(url, 'GET', `/v1/pets?limit=100&after=${after}`, { auth: KEY });
    const batch = page.json as Array<{ id: number; name: string }>;
    pets.push(...batch);
    if (batch.length < 100) return pets;
    after = (batch.at(-1) as { id: number }).id;
  }
}

for (const first of ['SIGTERM', 'SIGINT'] as const) {
  test(`more signals during a stop begun by ${first} are logged; the request in flight finishes and the process exits 0`, async (t) => {
    const dir = await tempDirFor(t, 'petstore-stop-');
    const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
    const body = PET('InFlight');
    const wire = await createInFlight(server.url, body);
    server.child.kill(first);
    await waitFor(() => server.stdout().includes('"msg":"stopping"'), 5000, 'stopping');
    for (const again of [first, first === 'SIGTERM' ? 'SIGINT' : 'SIGTERM'] as const) {
      const seen = server.stdout().split('"signal"').length;
      server.child.kill(again);
      await waitFor(() => server.stdout().split('"signal"').length > seen, 5000, `${again} is logged`);
    }
    await sleep(100);
    assert.equal(server.child.exitCode, null, 'still stopping');
    assert.equal(server.child.signalCode, null, 'not killed by a later signal');

    wire.socket.write(body);
    await waitFor(() => wire.answers().length === 1, 5000, 'the in-flight answer');
    const answer = wire.answers()[0] as RawAnswer;
    assert.equal(answer.status, 201);
    assert.deepEqual(answer.headers.connection, ['close'], 'a response sent during the stop says close');
    assert.deepEqual(await exitOf(server), { code: 0, signal: null });
    await assertStopped(dir);
    assert.ok(!(await readdir(dir)).includes('petstore.lock'), 'the lock is released');
    assert.match(await readFile(join(dir, 'pets.json'), 'utf8'), /"InFlight"/);
  });
}

test('a SIGTERM sent the moment the server says it listens is a graceful stop, not death by signal', async (t) => {
  for (let i = 0; i < 10; i++) {
    const dir = await tempDirFor(t, 'petstore-stop-');
    const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
    server.child.kill('SIGTERM');
    assert.deepEqual(await exitOf(server), { code: 0, signal: null }, `start ${i}`);
  }
});

test('a connection that never sends a byte does not hold up the stop: exit well under 1 s', async (t) => {
  const dir = await tempDirFor(t, 'petstore-stop-');
  const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
  const silent = new Wire(server.url);
  t.after(() => silent.socket.destroy());
  await silent.connected;
  const started = performance.now();
  server.child.kill('SIGTERM');
  const exited = await Promise.race([exitOf(server), sleep(5000).then(() => undefined)]);
  const ms = Math.round(performance.now() - started);
  assert.deepEqual(exited, { code: 0, signal: null }, `exited after ${ms} ms`);
  t.diagnostic(`exited ${ms} ms after SIGTERM`);
  assert.ok(ms < 1000, `exited ${ms} ms after SIGTERM`);
  await waitFor(() => silent.ended, 1000, 'the silent connection is closed');
  assert.equal(silent.data.length, 0, 'nothing is sent to a connection that asked nothing');
});

test('during the stop, a request arriving on an open keep-alive connection gets a 503 with Connection: close, not a reset', async (t) => {
  const dir = await tempDirFor(t, 'petstore-stop-');
  const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
  // A keep-alive connection that has been answered once and has the start of its next request in.
  const open = new Wire(server.url);
  t.after(() => open.socket.destroy());
  await open.connected;
  open.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => open.answers().length === 1, 5000, 'first answer');
  const late = PET('Late');
  const head = createHead(late);
  open.socket.write(head.slice(0, 20));
  const inFlight = await createInFlight(server.url, PET('Kept'));

  server.child.kill('SIGTERM');
  await waitFor(() => server.stdout().includes('"msg":"stopping"'), 5000, 'stopping');
  await sleep(400);
  assert.equal(open.ended, false, 'a connection with a request partly received is not cut');
  open.socket.write(head.slice(20) + late);
  await waitFor(() => open.answers().length === 2, 5000, 'the answer to the late request');
  const refused = open.answers()[1] as RawAnswer;
  assert.equal(refused.status, 503, refused.head);
  assert.deepEqual(refused.headers.connection, ['close']);
  assert.ok(refused.headers['retry-after'] !== undefined, 'Retry-After');
  assert.deepEqual(refused.headers['content-type'], ['application/json']);
  assert.equal((JSON.parse(refused.body.toString('utf8')) as { code: string }).code, 'unavailable');
  await waitFor(() => open.ended, 2000, 'the connection closes after the 503');

  inFlight.socket.write(PET('Kept'));
  await waitFor(() => inFlight.answers().length === 1, 5000, 'the in-flight answer');
  assert.equal(inFlight.answers()[0]?.status, 201);
  assert.deepEqual(inFlight.answers()[0]?.headers.connection, ['close']);
  assert.deepEqual(await exitOf(server), { code: 0, signal: null });

  const again = await spawnServerFor(t, ['--data-dir', dir], ENV);
  assert.deepEqual(
    (await listAll(again.url)).map((p) => p.name),
    ['Kept'],
    'the refused create stored nothing',
  );
  again.child.kill('SIGTERM');
  assert.deepEqual(await exitOf(again), { code: 0, signal: null });
});

test('a keep-alive connection answered just before the stop keeps its grace from that answer, not from when it opened', async (t) => {
  const dir = await tempDirFor(t, 'petstore-stop-');
  const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
  const open = new Wire(server.url);
  t.after(() => open.socket.destroy());
  await open.connected;
  await sleep(500); // open longer than the 200 ms grace before its first request
  open.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => open.answers().length === 1, 5000, 'first answer');
  server.child.kill('SIGTERM');
  await waitFor(() => server.stdout().includes('"msg":"stopping"'), 5000, 'stopping');
  // Well within the grace counted from the answer (200 ms; this takes a few ms: a signal, a log line
  // and a write): the request is refused with an answer, not cut.
  open.socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
  await waitFor(() => open.answers().length === 2 || open.ended, 5000, 'an answer or the end of the connection');
  assert.equal(open.answers()[1]?.status, 503, 'the request after the stop began is answered');
  assert.deepEqual(await exitOf(server), { code: 0, signal: null });
});

interface Outcome {
  status?: number;
  connection?: string | undefined;
  retryAfter?: string | undefined;
  code?: string;
  error?: string;
  /** Whether the request went on a connection of its own (none answered on it before). */
  fresh?: boolean;
  name: string;
  id?: number;
}

/** One keep-alive client creating pets until the server refuses the connection (or `max` requests). */
async function createLoop(url: string, label: string, max: number, onCreated: () => void): Promise<Outcome[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const { hostname, port } = new URL(url);
  const outcomes: Outcome[] = [];
  try {
    for (let i = 0; i < max; i++) {
      const name = `${label}-${i}`;
      const body = PET(name);
      const outcome = await new Promise<Outcome>((resolvePromise) => {
        const req = httpRequest(
          {
            host: hostname,
            port,
            method: 'POST',
            path: '/v1/pets',
            agent,
            headers: {
              authorization: `Bearer ${KEY}`,
              'content-type': 'application/json',
              'content-length': Buffer.byteLength(body),
            },
          },
          (res) => {
            let text = '';
            res
              .setEncoding('utf8')
              .on('data', (s: string) => (text += s))
              .on('end', () => {
                const json = JSON.parse(text) as { id?: number; code?: string };
                resolvePromise({
                  name,
                  status: res.statusCode ?? 0,
                  connection: res.headers.connection,
                  retryAfter: res.headers['retry-after'],
                  ...(json.id === undefined ? {} : { id: json.id }),
                  ...(json.code === undefined ? {} : { code: json.code }),
                });
              });
          },
        );
        req.on('error', (error: NodeJS.ErrnoException) =>
          resolvePromise({ name, error: `${error.code ?? ''} ${error.message}`, fresh: !req.reusedSocket }),
        );
        req.end(body);
      });
      outcomes.push(outcome);
      if (outcome.status === 201) onCreated();
      if (outcome.error !== undefined) break;
    }
  } finally {
    agent.destroy();
  }
  return outcomes;
}

test('keep-alive clients creating pets while SIGTERM arrives: no reset, every answer 201 or 503, every 201 kept', {
  timeout: 120_000,
}, async (t) => {
  const CLIENTS = 12;
  for (let round = 0; round < 3; round++) {
    const dir = await tempDirFor(t, 'petstore-stop-');
    const server = await spawnServerFor(t, ['--data-dir', dir], ENV);
    let created = 0;
    let signalled = false;
    const onCreated = (): void => {
      if (++created === 40 + round * 40 && !signalled) {
        signalled = true;
        server.child.kill('SIGTERM');
      }
    };
    const results = await Promise.all(
      Array.from({ length: CLIENTS }, (_, c) => createLoop(server.url, `r${round}c${c}`, 2_000, onCreated)),
    );
    assert.ok(signalled, 'the stop began while clients were creating');
    assert.deepEqual(await exitOf(server), { code: 0, signal: null });

    const all = results.flat();
    // A new connection is refused, or reset when the kernel completed its handshake just before the
    // listener closed: never served. A connection that was answered on is never reset.
    const unserved = (o: Outcome): boolean =>
      o.error?.startsWith('ECONNREFUSED') === true || (o.fresh === true && o.error?.startsWith('ECONNRESET') === true);
    assert.deepEqual(
      all.filter((o) => o.error !== undefined && !unserved(o)),
      [],
      'only new connections refused, never a reset of one answered on',
    );
    assert.deepEqual(
      [...new Set(all.filter((o) => o.status !== undefined).map((o) => o.status))].filter(
        (s) => s !== 201 && s !== 503,
      ),
      [],
    );
    for (const o of all.filter((x) => x.status === 503)) {
      assert.equal(o.connection, 'close');
      assert.equal(o.code, 'unavailable');
      assert.ok(o.retryAfter !== undefined);
    }
    for (const outcomes of results) {
      const answered = outcomes.filter((o) => o.status !== undefined);
      assert.equal(answered.at(-1)?.connection, 'close', 'each client is told to close before its connection ends');
    }

    const again = await spawnServerFor(t, ['--data-dir', dir], ENV);
    const kept = new Map((await listAll(again.url)).map((p) => [p.id, p.name]));
    const acknowledged = all.filter((o) => o.status === 201);
    for (const o of acknowledged) assert.equal(kept.get(o.id as number), o.name, `pet ${o.id} (${o.name}) is kept`);
    assert.equal(kept.size, acknowledged.length, 'nothing was stored that was not acknowledged');
    again.child.kill('SIGTERM');
    assert.deepEqual(await exitOf(again), { code: 0, signal: null });
  }
});

const ROOT = resolve(__dirname, '../..');

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  test(`npm start passes ${signal} on: the server stops gracefully when npm itself is signalled`, {
    timeout: 120_000,
  }, async (t) => {
    const dir = await tempDirFor(t, 'petstore-npm-');
    const npm = spawn('npm', ['start', '--', '--port', '0', '--data-dir', dir], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        PETSTORE_API_KEYS: KEY,
        npm_config_update_notifier: 'false',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    npm.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    npm.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    const npmExited = new Promise<number | null>((r) => npm.on('exit', (code) => r(code)));
    let serverPid: number | undefined;
    t.after(async () => {
      if (npm.exitCode === null && npm.signalCode === null) npm.kill('SIGKILL');
      if (serverPid !== undefined && alive(serverPid)) process.kill(serverPid, 'SIGKILL');
    });
    await waitFor(() => /"msg":"listening"/.test(out), 15_000, `listening (${out})`);
    const match = /"url":"(http:\/\/[^"]+)\/v1".*"pid":(\d+)/.exec(out);
    assert.ok(match !== null, out);
    serverPid = Number(match[2]);
    assert.notEqual(serverPid, npm.pid, 'the server runs in a child of npm');
    assert.equal(
      (
        await request(match[1] as string, 'POST', '/v1/pets', {
          auth: KEY,
          headers: [['content-type', 'application/json']],
          body: PET('ViaNpm'),
        })
      ).status,
      201,
    );

    npm.kill(signal);
    await waitFor(() => !alive(serverPid as number), 10_000, 'the server process ends');
    assert.match(out, /"msg":"stopping"/, 'the server stopped gracefully');
    await assertStopped(dir);
    assert.ok(!(await readdir(dir)).includes('petstore.lock'), 'the lock is released');
    assert.match(await readFile(join(dir, 'pets.json'), 'utf8'), /"ViaNpm"/);
    await Promise.race([npmExited, sleep(5000)]);
    assert.ok(npm.exitCode !== null || npm.signalCode !== null, 'npm ends too');
  });
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw error;
  }
}
