/**
 * Correctness on the wire: pipelined requests are answered in request order, an error about a later
 * malformed request comes after every response already owed, and the request line and Host header
 * are checked (RFC 9112 §2.3, §3.2). Raw bytes over loopback; every wait is bounded.
 */
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { parseResponse, type RawAnswer } from './fuzz-corpus.js';
import { startServer, TEST_KEY, type TestServer } from './support.js';

interface Conversation {
  answers: RawAnswer[];
  /** The server ended the connection (as opposed to the test's timeout). */
  closedByServer: boolean;
}

/** Writes `bytes` in one write on a fresh connection and parses every response until the server closes. */
function converse(url: string, bytes: string, timeoutMs = 5000): Promise<Conversation> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(port), hostname);
    let buffer = Buffer.alloc(0);
    let closedByServer = false;
    const timer = setTimeout(() => socket.destroy(), timeoutMs);
    socket.on('data', (chunk: Buffer) => (buffer = Buffer.concat([buffer, chunk])));
    socket.on('end', () => (closedByServer = true));
    socket.on('error', () => (closedByServer = true)); // a reset: what arrived is still parsed
    socket.on('close', () => {
      clearTimeout(timer);
      const answers: RawAnswer[] = [];
      for (let rest = buffer; rest.length > 0; ) {
        const parsed = parseResponse(rest, true, false);
        if (parsed === undefined) break;
        answers.push(parsed.answer);
        rest = rest.subarray(parsed.used);
      }
      resolve({ answers, closedByServer });
    });
    socket.write(bytes);
  });
}

const AUTH = `Authorization: Bearer ${TEST_KEY}\r\n`;
const PET = '{"name":"Piped","categoryId":7}';
const CREATE = `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${PET.length}\r\n\r\n${PET}`;
const LIST = `GET /v1/pets HTTP/1.1\r\nHost: x\r\n${AUTH}\r\n`;

const statuses = (c: Conversation): number[] => c.answers.map((a) => a.status);
const errorCode = (a: RawAnswer | undefined): unknown =>
  (JSON.parse(a?.body.toString('utf8') ?? 'null') as { code?: unknown } | null)?.code;

describe('pipelined requests', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  const count = async (): Promise<number> =>
    ((await server.request('GET', '/v1/pets?limit=100')).json as unknown[]).length;

  test('a create, a list and a malformed line in one write: 201, 200 with the pet, then the 400, then the close', async () => {
    const before = await count();
    const talk = await converse(server.url, `${CREATE + LIST}BOGUS\r\n\r\n`);
    assert.deepEqual(statuses(talk), [201, 200, 400]);
    assert.equal((JSON.parse(talk.answers[0]?.body.toString('utf8') ?? '') as { name: string }).name, 'Piped');
    assert.ok(Array.isArray(JSON.parse(talk.answers[1]?.body.toString('utf8') ?? '')), 'the list');
    assert.equal(errorCode(talk.answers[2]), 'invalid_request');
    assert.deepEqual(talk.answers[2]?.headers.connection, ['close']);
    assert.ok(talk.closedByServer, 'the server closes after the error');
    assert.equal(await count(), before + 1, 'exactly the acknowledged pet is stored');
  });

  test('oversized headers in second place: the 201 goes out first, then the 431', async () => {
    const before = await count();
    const talk = await converse(
      server.url,
      `${CREATE}GET /v1/pets HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
    );
    assert.deepEqual(statuses(talk), [201, 431]);
    assert.equal(errorCode(talk.answers[1]), 'headers_too_large');
    assert.ok(talk.closedByServer);
    assert.equal(await count(), before + 1);
  });

  test('an HTTP/1.0 create without Content-Length after a create and a list: every answer in order, one pet stored', async () => {
    const before = await count();
    // Without Content-Length an HTTP/1.0 request has no body: its JSON is read as the next (malformed) request.
    const old = `POST /v1/pets HTTP/1.0\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\n\r\n${PET}`;
    const talk = await converse(server.url, CREATE + LIST + old);
    assert.deepEqual(statuses(talk).slice(0, 3), [201, 200, 400]);
    assert.equal(errorCode(talk.answers[2]), 'invalid_request');
    assert.ok(talk.closedByServer);
    assert.equal(await count(), before + 1);
  });

  test('a refused create whose unread chunked body turns out malformed gets exactly one answer', async () => {
    const talk = await converse(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nZZ\r\n`,
    );
    assert.deepEqual(statuses(talk), [415]);
  });
});

describe('request line and Host', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer();
  });
  after(() => server.close());

  const get = (hostLines: string, version = 'HTTP/1.1'): Promise<Conversation> =>
    converse(server.url, `GET /v1/pets ${version}\r\n${hostLines}${AUTH}Connection: close\r\n\r\n`);

  for (const [label, lines] of [
    ['two Host headers', 'Host: a\r\nHost: b\r\n'],
    ['Host: a b', 'Host: a b\r\n'],
    ['Host: x/y', 'Host: x/y\r\n'],
    ['Host: @evil', 'Host: @evil\r\n'],
    ['an empty Host', 'Host: \r\n'],
    ['Host: a:b (port not digits)', 'Host: a:b\r\n'],
    ['Host: [zz] (not IPv6)', 'Host: [zz]\r\n'],
  ] as const) {
    test(`${label} is a 400 invalid_request naming Host`, async () => {
      const talk = await get(lines);
      assert.deepEqual(statuses(talk), [400]);
      const body = JSON.parse(talk.answers[0]?.body.toString('utf8') ?? '') as { code: string; message: string };
      assert.equal(body.code, 'invalid_request');
      assert.match(body.message, /Host/);
      assert.deepEqual(talk.answers[0]?.headers['content-type'], ['application/json']);
    });
  }

  for (const host of [
    'example.com',
    'example.com:8080',
    '127.0.0.1:1',
    '[::1]:8080',
    '[2001:db8::1]',
    'a_b~c.-x',
    'xn--bcher-kva.example',
    'x%41y',
  ]) {
    test(`Host: ${host} is accepted`, async () => {
      assert.deepEqual(statuses(await get(`Host: ${host}\r\n`)), [200]);
    });
  }

  test('HTTP/1.0 without Host is still accepted', async () => {
    assert.deepEqual(statuses(await get('', 'HTTP/1.0')), [200]);
  });

  for (const version of ['HTTP/2.0', 'HTTP/1.2', 'HTTP/3.0', 'HTTP/0.9']) {
    test(`a create with ${version} is a 505 http_version_not_supported and stores nothing`, async () => {
      const before = (await server.request('GET', '/v1/pets?limit=100')).text;
      const talk = await converse(
        server.url,
        `POST /v1/pets ${version}\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nContent-Length: ${PET.length}\r\nConnection: close\r\n\r\n${PET}`,
      );
      assert.deepEqual(statuses(talk), [505]);
      assert.equal(errorCode(talk.answers[0]), 'http_version_not_supported');
      assert.equal((await server.request('GET', '/v1/pets?limit=100')).text, before);
    });
  }

  for (const codings of [['gzip, chunked'], ['gzip', 'chunked'], ['deflate,chunked']]) {
    test(`Transfer-Encoding ${codings.join(' + ')} is a 415 unsupported_media_type and stores nothing`, async () => {
      const before = (await server.request('GET', '/v1/pets?limit=100')).text;
      const te = codings.map((c) => `Transfer-Encoding: ${c}\r\n`).join('');
      const talk = await converse(
        server.url,
        `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\n${te}Connection: close\r\n\r\n${PET.length.toString(16)}\r\n${PET}\r\n0\r\n\r\n`,
      );
      assert.deepEqual(statuses(talk), [415]);
      assert.equal(errorCode(talk.answers[0]), 'unsupported_media_type');
      assert.equal((await server.request('GET', '/v1/pets?limit=100')).text, before);
    });
  }

  test('Transfer-Encoding: chunked alone still creates', async () => {
    const talk = await converse(
      server.url,
      `POST /v1/pets HTTP/1.1\r\nHost: x\r\n${AUTH}Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n${PET.length.toString(16)}\r\n${PET}\r\n0\r\n\r\n`,
    );
    assert.deepEqual(statuses(talk), [201]);
  });
});
