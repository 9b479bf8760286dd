/**
 * W3C Trace Context in the request log: a valid `traceparent` puts its trace id and parent span id
 * in that request's line; anything else is ignored, never an error, and nothing of it is logged.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { startServer, type TestServer } from './support.js';
import { jsonLogger } from './package.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT_ID = '00f067aa0ba902b7';

/** A server whose default logger writes into `lines`, one parsed JSON object per request line. */
async function loggedServer(
  t: TestContext,
): Promise<{ server: TestServer; lines: () => Array<Record<string, unknown>>; raw: () => string }> {
  let written = '';
  const logger = jsonLogger('info', { write: (text: string) => (written += text) }, { write: () => true });
  const server = await startServer({ logger });
  t.after(() => server.close());
  const lines = (): Array<Record<string, unknown>> => {
    logger.flush();
    return written
      .split('\n')
      .filter((l) => l !== '')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request');
  };
  return { server, lines, raw: () => written };
}

test("a valid traceparent puts trace_id and span_id in its request's log line, whatever the flags", async (t) => {
  const { server, lines } = await loggedServer(t);
  for (const [i, flags] of ['01', '00', 'ff'].entries()) {
    const res = await server.request('GET', '/v1/pets', {
      headers: [
        ['traceparent', `00-${TRACE_ID}-${PARENT_ID}-${flags}`],
        ['x-request-id', `valid-${i}`],
      ],
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.traceparent, undefined, 'nothing is echoed');
  }
  await server.request('GET', '/v1/nowhere', {
    auth: false,
    headers: [
      ['traceparent', `00-${TRACE_ID}-${PARENT_ID}-01`],
      ['x-request-id', 'valid-401'],
    ],
  });
  await server.request('GET', '/v1/pets', { headers: [['x-request-id', 'without']] });
  const logged = lines();
  for (const id of ['valid-0', 'valid-1', 'valid-2', 'valid-401']) {
    const line = logged.find((l) => l.id === id);
    assert.equal(line?.trace_id, TRACE_ID, id);
    assert.equal(line?.span_id, PARENT_ID, id);
  }
  const without = logged.find((l) => l.id === 'without');
  assert.ok(without !== undefined && !('trace_id' in without) && !('span_id' in without));
});

test('a traceparent of a later version is read as the fields of version 00, with whatever follows them after a dash left unread', async (t) => {
  const { server, lines, raw } = await loggedServer(t);
  const later = [
    `01-${TRACE_ID}-${PARENT_ID}-01`,
    `cc-${TRACE_ID}-${PARENT_ID}-00-what-the-future-holds`,
    `fe-${TRACE_ID}-${PARENT_ID}-03-`,
  ];
  for (const [i, value] of later.entries()) {
    assert.equal(
      (
        await server.request('GET', '/v1/pets', {
          headers: [
            ['traceparent', value],
            ['x-request-id', `later-${i}`],
          ],
        })
      ).status,
      200,
    );
  }
  const logged = lines();
  for (const i of later.keys()) {
    const line = logged.find((l) => l.id === `later-${i}`);
    assert.equal(line?.trace_id, TRACE_ID, later[i]);
    assert.equal(line?.span_id, PARENT_ID, later[i]);
  }
  assert.ok(!raw().includes('future'), "the fields after version 00's are not logged");
});

const MALFORMED: ReadonlyArray<readonly [string, string | string[]]> = [
  ['a later version with something but a dash after the flags', `01-${TRACE_ID}-${PARENT_ID}-01x`],
  ['a later version given twice', [`01-${TRACE_ID}-${PARENT_ID}-01`, `01-${TRACE_ID}-${PARENT_ID}-01`]],
  ['a later version in upper case', `0A-${TRACE_ID}-${PARENT_ID}-01`],
  ['version ff', `ff-${TRACE_ID}-${PARENT_ID}-01`],
  ['version ff with more', `ff-${TRACE_ID}-${PARENT_ID}-01-what`],
  ['upper-case hex', `00-${TRACE_ID.toUpperCase()}-${PARENT_ID}-01`],
  ['an all-zero trace id', `00-${'0'.repeat(32)}-${PARENT_ID}-01`],
  ['an all-zero parent id', `00-${TRACE_ID}-${'0'.repeat(16)}-01`],
  ['a trace id one digit short', `00-${TRACE_ID.slice(1)}-${PARENT_ID}-01`],
  ['a parent id one digit long', `00-${TRACE_ID}-${PARENT_ID}a-01`],
  ['no flags', `00-${TRACE_ID}-${PARENT_ID}`],
  ['more after the flags in version 00', `00-${TRACE_ID}-${PARENT_ID}-01-what`],
  ['a letter beyond hex', `00-${TRACE_ID.slice(0, -1)}g-${PARENT_ID}-01`],
  ['underscores for dashes', `00_${TRACE_ID}_${PARENT_ID}_01`],
  ['the header twice', [`00-${TRACE_ID}-${PARENT_ID}-01`, `00-${TRACE_ID}-${PARENT_ID}-01`]],
  ['quotes and braces', `00-${TRACE_ID}-${PARENT_ID}-01","x":"{}`],
  ['empty', ''],
];

test('a malformed traceparent is ignored: the request is answered as usual and its line has no trace ids, nothing of the header', async (t) => {
  const { server, lines, raw } = await loggedServer(t);
  for (const [i, [what, value]] of MALFORMED.entries()) {
    const headers: Array<[string, string]> = (Array.isArray(value) ? value : [value]).map((v) => ['traceparent', v]);
    const res = await server.request('GET', '/v1/pets', { headers: [...headers, ['x-request-id', `bad-${i}`]] });
    assert.equal(res.status, 200, what);
  }
  const logged = lines();
  for (const [i, [what]] of MALFORMED.entries()) {
    const line = logged.find((l) => l.id === `bad-${i}`);
    assert.ok(line !== undefined, what);
    assert.deepEqual(
      Object.keys(line),
      ['time', 'level', 'msg', 'id', 'method', 'path', 'status', 'ms', 'client'],
      what,
    );
  }
  assert.ok(
    !raw().includes(TRACE_ID) &&
      !raw().includes(TRACE_ID.toUpperCase()) &&
      !raw().includes('what') &&
      !raw().includes('"x"'),
    'no part of a refused header reaches the log',
  );
});
