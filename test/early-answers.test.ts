/**
 * An error answered before its request's body was read (401, 403, 405, 413, 415, 429…) closes the
 * connection after it: otherwise a client trickling the rest of a large declared body would hold the
 * connection, and its slot, until the request timeout. Errors that leave no body behind keep it.
 */
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { after, before, test } from 'node:test';
import { startServer, TEST_KEY, waitFor, type TestServer } from './support.js';

let server: TestServer;
before(async () => (server = await startServer()));
after(() => server.close());

/** A raw connection: what it received and whether the server closed it. */
async function open(to: TestServer = server): Promise<{ socket: Socket; data: () => string; closed: () => boolean }> {
  const { port } = new URL(to.url);
  const socket = connect(Number(port), '127.0.0.1');
  let data = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
  socket.on('error', () => {}); // a reset is a close
  socket.once('close', () => (closed = true));
  await new Promise((resolve) => socket.once('connect', resolve));
  return { socket, data: () => data, closed: () => closed };
}

const KEY = `Authorization: Bearer ${TEST_KEY}\r\n`;
const EARLY: Array<[number, string]> = [
  [401, 'POST /v1/pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n'],
  [405, `PUT /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Length: 60000\r\n\r\n`],
  [413, `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Type: application/json\r\nContent-Length: 600000\r\n\r\n`],
  [415, `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Type: text/plain\r\nContent-Length: 60000\r\n\r\n`],
];

for (const [status, head] of EARLY) {
  test(`a ${status} sent before a trickled body is read says Connection: close, and the server closes the connection`, async (t) => {
    const peer = await open();
    t.after(() => peer.socket.destroy());
    peer.socket.write(`${head}{"na`);
    const trickle = setInterval(() => peer.socket.writable && peer.socket.write('x'), 50);
    t.after(() => clearInterval(trickle));
    await waitFor(() => /\r\n\r\n/.test(peer.data()), 5000, 'the answer');
    const answer = peer.data().split('\r\n\r\n')[0] ?? '';
    assert.match(answer, new RegExp(`^HTTP/1\\.1 ${status} `));
    assert.match(answer, /\r\nconnection: close\r\n/i);
    assert.equal(answer.match(/\r\nconnection:/gi)?.length, 1, 'said once');
    await waitFor(peer.closed, 5000, 'the server closes the connection');
  });
}

test('errors that leave no body behind keep the connection: a 401 to a GET, a 400 to a body read in full', async (t) => {
  const peer = await open();
  t.after(() => peer.socket.destroy());
  const bad = '{"name":';
  peer.socket.write('GET /v1/pets HTTP/1.1\r\nHost: a\r\n\r\n');
  await waitFor(() => /^HTTP\/1\.1 401 [\s\S]*\r\n\r\n/.test(peer.data()), 5000, 'the 401');
  // The body comes after the headers have been handed over, so the handler reads it to its end.
  peer.socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Type: application/json\r\nContent-Length: ${bad.length}\r\n\r\n`,
  );
  await new Promise((resolve) => setTimeout(resolve, 50));
  peer.socket.write(bad);
  await waitFor(() => /HTTP\/1\.1 400 /.test(peer.data()), 5000, 'the 400');
  peer.socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
  await waitFor(() => /HTTP\/1\.1 200 /.test(peer.data()), 5000, 'a third answer on the same connection');
  assert.doesNotMatch(peer.data(), /connection: close/i);
  assert.equal(peer.closed(), false);
});

test('a chunked body that goes over the limit after its headers were handed over gets a 413 saying Connection: close, once, and the connection closes', async (t) => {
  // The rest is left unread (body.ts pauses the request): the connection must not be kept for another request.
  const small = await startServer({ bodyLimit: 1024 });
  t.after(() => small.close());
  const peer = await open(small);
  t.after(() => peer.socket.destroy());
  const chunk = 'x'.repeat(40 * 1024);
  const body = `1d\r\n{"name":"Rex","categoryId":1}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`;
  peer.socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n${body}`,
  );
  await waitFor(() => /\r\n\r\n/.test(peer.data()), 5000, 'the answer');
  const answer = peer.data().split('\r\n\r\n')[0] ?? '';
  assert.match(answer, /^HTTP\/1\.1 413 /);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  assert.equal(answer.match(/\r\nconnection:/gi)?.length, 1, 'said once');
  await waitFor(peer.closed, 5000, 'the server closes the connection');
});

test('a client that goes away in the middle of its body is logged as a 400 of its own making, never a server fault', async (t) => {
  const logged: Array<{ status: number; code: string | undefined }> = [];
  const errors: string[] = [];
  const watched = await startServer({
    logger: {
      request: (entry) => logged.push({ status: entry.status, code: entry.code }),
      info() {},
      error: (message) => errors.push(message),
    },
  });
  t.after(() => watched.close());
  const peer = await open(watched);
  peer.socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\n${KEY}Content-Type: application/json\r\nContent-Length: 60\r\n\r\n{"name":`,
  );
  await new Promise((r) => setTimeout(r, 100));
  peer.socket.destroy();
  await waitFor(() => logged.length > 0, 5000, 'the request logged');
  assert.deepEqual(logged, [{ status: 400, code: 'invalid_request' }]);
  assert.deepEqual(errors, []);
});

test('a 401 to a create whose whole body came with its headers still says Connection: close (decided when the answer is made, not when it is written)', async (t) => {
  const peer = await open();
  t.after(() => peer.socket.destroy());
  const body = '{"name":"Rex","categoryId":1}';
  peer.socket.write(
    `POST /v1/pets HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
  );
  await waitFor(() => /\r\n\r\n/.test(peer.data()), 5000, 'the answer');
  const answer = peer.data().split('\r\n\r\n')[0] ?? '';
  assert.match(answer, /^HTTP\/1\.1 401 /);
  assert.match(answer, /\r\nconnection: close\r\n/i);
  await waitFor(peer.closed, 5000, 'the server closes the connection');
});
