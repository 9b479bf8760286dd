/**
 * A client that sends none of the headers or parameters of issue 23 (wait, an event-stream Accept,
 * If-None-Match, Accept-Encoding) gets the answers it got before, byte for byte, apart from the new
 * ETag and Vary headers. test/fixtures/plain-answers.json holds the raw answers of the server before
 * that change (commit ba9e013) to the requests below, their Date header taken out.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { rawRequest, startServer, TEST_KEY } from './support.js';

const BEFORE = JSON.parse(
  readFileSync(resolve(__dirname, '../../test/fixtures/plain-answers.json'), 'utf8'),
) as string[];

/** The requests, in order: 25 creates, then reads and errors. */
function requests(): string[] {
  const send = (method: string, path: string, body?: string, auth = true): string =>
    `${method} ${path} HTTP/1.1\r\nHost: x\r\n${auth ? `Authorization: Bearer ${TEST_KEY}\r\n` : ''}X-Request-Id: golden\r\nConnection: close\r\n` +
    `${body === undefined ? '' : `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n`}\r\n${body ?? ''}`;
  const list: string[] = [];
  const statuses = ['available', 'pending', 'sold', undefined];
  for (let i = 1; i <= 25; i++) {
    const status = statuses[i % 4];
    const name = `Pet ${i} ${'é猫🐕"\\'.repeat(i % 3)}`;
    list.push(
      send(
        'POST',
        '/v1/pets',
        `{"name":${JSON.stringify(name)},"categoryId":${i === 7 ? '9223372036854775807' : i}${status === undefined ? '' : `,"status":"${status}"`}}`,
      ),
    );
  }
  for (const path of [
    '/v1/pets',
    '/v1/pets?limit=2',
    '/v1/pets?limit=2&after=2',
    '/v1/pets?status=sold',
    '/v1/pets?after=1000',
    '/v1/pets?limit=100',
    '/v1/pets?limit=20&after=20',
    '/v1/pets/1',
    '/v1/pets/7',
    '/v1/pets/999',
    '/v1/pets/abc',
    '/v1/pets?limit=0',
    '/healthz',
    '/readyz',
  ]) {
    list.push(send('GET', path));
  }
  list.push(send('HEAD', '/v1/pets?limit=3'), send('HEAD', '/v1/pets/2'), send('GET', '/v1/pets', undefined, false));
  return list;
}

test('without the new headers and parameters every answer is byte for byte what it was, but for ETag and Vary', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const sent = requests();
  assert.equal(sent.length, BEFORE.length);
  let tagged = 0;
  for (const [i, bytes] of sent.entries()) {
    const answer = (await rawRequest(server.url, bytes)).replace(/\r\ndate: [^\r]*/i, '');
    const [head = '', ...body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    const kept = lines.filter((line) => !/^(etag|vary): /i.test(line));
    if (lines.some((line) => line.startsWith('etag: W/"'))) tagged++;
    assert.equal(
      [kept.join('\r\n'), ...body].join('\r\n\r\n'),
      BEFORE[i],
      `answer ${i + 1}: ${bytes.split('\r\n')[0]}`,
    );
  }
  assert.equal(tagged, 11, 'the 200s of listPets and getPet carry an ETag');
});
