/**
 * A request's log line is written as bytes straight into the logger's buffer when it can be
 * (lib/request-log-line.ts). Those bytes must be the JSON line the text path makes, to the byte,
 * and every line the bytes cannot be written for must be refused whole, for the text path to take.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { requestLine, writeRequestLine, type RequestLogEntry } from '#dist/lib/request-log-line.js';

const TIME = '2026-11-27T09:41:07.123Z';

/** The line as JSON.stringify writes it, fields in the log's order: an oracle independent of both paths. */
function expected(time: string, entry: RequestLogEntry): string {
  const { id, method, path, status, ms, client, code, keyId, traceId, spanId } = entry;
  const failure = code === undefined ? {} : keyId === undefined ? { code } : { code, keyId };
  return `${JSON.stringify({ time, level: 'info', msg: 'request', id, method, path, status, ms, client, ...failure, trace_id: traceId, span_id: spanId })}\n`;
}

function written(entry: RequestLogEntry, at = 5, size = 4096, time = TIME): string | undefined {
  const buffer = Buffer.alloc(size, 0x2a);
  const end = writeRequestLine(buffer, at, time, entry);
  if (end === -1) return undefined;
  assert.equal(buffer.subarray(0, at).toString('latin1'), '*'.repeat(at), 'nothing is written before `at`');
  assert.ok(
    buffer.subarray(end).every((b) => b === 0x2a),
    'nothing is written after the end it returns',
  );
  return buffer.toString('utf8', at, end);
}

const base: RequestLogEntry = {
  id: '0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0',
  method: 'GET',
  path: '/v1/pets/17',
  status: 200,
  ms: 0.37,
};

test("the bytes of a line are JSON.stringify's, to the byte, with every optional field and every status and ms", () => {
  const entries: RequestLogEntry[] = [
    base,
    { ...base, method: 'POST', path: '/v1/pets', status: 201, ms: 12 },
    { ...base, status: 404, code: 'not_found', ms: 1.5 },
    { ...base, status: 403, code: 'insufficient_scope', keyId: 'reader-2', ms: 0.05 },
    { ...base, traceId: '4bf92f3577b34da6a3ce929d0e0e4736', spanId: '00f067aa0ba902b7' },
    { ...base, client: '203.0.113.9' },
    { ...base, client: '2001:db8::17', status: 401, code: 'unauthorized' },
    {
      ...base,
      status: 429,
      code: 'rate_limited',
      keyId: 'k',
      client: '::1',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
    },
    { ...base, id: '', path: '', method: '' },
    { ...base, path: ` !#$%&'()*+,-./09:;<=>?@AZ[]^_\`az{|}~` }, // every kind of printable ASCII but '"' and '\'
  ];
  for (let status = 100; status <= 999; status++) entries.push({ ...base, status });
  // Whole hundredths, as the app gives them, and what an embedder may: JavaScript's own digits for each.
  for (const ms of [
    0,
    -0,
    0.01,
    0.1,
    0.5,
    1,
    9.99,
    10,
    100.05,
    123.45,
    99999.99,
    1 / 3,
    0.125,
    1e21,
    1e-7,
    2 ** 53,
    -1.5,
    2 ** 46 / 100,
    77923018788499.6,
  ]) {
    entries.push({ ...base, ms });
  }
  for (const entry of entries) {
    const line = expected(TIME, entry);
    assert.equal(written(entry), line, JSON.stringify(entry));
    assert.equal(requestLine(TIME, entry), line, `the text path too: ${JSON.stringify(entry)}`);
  }
});

test('a line whose fields need escaping, are not ASCII, or whose status is not three digits is refused whole, for the text path', () => {
  const refused: RequestLogEntry[] = [
    { ...base, path: '/v1/"quoted"' },
    { ...base, client: 'a"b' },
    { ...base, path: '/v1/back\\slash' },
    { ...base, path: '/v1/ctl\u0001' },
    { ...base, path: '/v1/del\u007f' },
    { ...base, path: '/v1/ünï' },
    { ...base, path: '/v1/\u2028' },
    { ...base, id: 'a"b' },
    { ...base, method: 'G\u00c9T' },
    { ...base, status: 404, code: 'x"y' },
    { ...base, status: 404, code: 'c', keyId: 'ké' },
    { ...base, traceId: '\n' },
    { ...base, spanId: '\\' },
    { ...base, status: 99 },
    { ...base, status: 1000 },
    { ...base, status: 200.5 },
    { ...base, status: Number.NaN },
  ];
  for (const entry of refused) {
    assert.equal(written(entry), undefined, JSON.stringify(entry));
    const line = requestLine(TIME, entry);
    if (Number.isInteger(entry.status))
      assert.equal(line, expected(TIME, entry), `the text path writes it: ${JSON.stringify(entry)}`);
  }
});

test('a line is refused when it does not fit, at every length short of its own, and fits exactly at its own', () => {
  const entry = {
    ...base,
    status: 404,
    client: '198.51.100.7',
    code: 'not_found',
    keyId: 'reader',
    traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
    spanId: '00f067aa0ba902b7',
  };
  const length = Buffer.byteLength(expected(TIME, entry));
  for (let room = 0; room < length; room++)
    assert.equal(written(entry, 3, 3 + room), undefined, `${room} bytes of room`);
  assert.equal(written(entry, 3, 3 + length), expected(TIME, entry));
});

test('the time at the head of a line changes with the time it is given', () => {
  const later = '2026-11-27T09:41:07.124Z';
  assert.equal(written(base), expected(TIME, base));
  assert.equal(written(base, 0, 4096, later), expected(later, base));
  assert.equal(written(base), expected(TIME, base));
});

test('ms is written as JavaScript writes the number: every hundredth to 2,000 ms, and hundredths at every scale up to 2^46', () => {
  // The rest of the line is the same for every ms (checked whole once): each check compares only the ms text.
  const head = expected(TIME, base).slice(0, -`${base.ms}}\n`.length);
  assert.equal(written(base), expected(TIME, base));
  const buffer = Buffer.alloc(512);
  const check = (ms: number): void => {
    const end = writeRequestLine(buffer, 0, TIME, { ...base, ms });
    assert.equal(buffer.toString('latin1', head.length, end), `${JSON.stringify(ms)}}\n`, `${ms}`);
  };
  check(0.37);
  assert.equal(buffer.toString('latin1', 0, head.length), head);
  for (let hundredths = 0; hundredths <= 200_000; hundredths++) check(hundredths / 100);
  let seed = 11;
  for (let i = 0; i < 100_000; i++) {
    seed = (seed * 48271) % 2147483647;
    check(Math.round((seed / 2147483647) * 2 ** (seed % 47)) / 100);
  }
  check((2 ** 46 - 1) / 100);
});

test("an embedder's entry with a number or nothing where a string belongs, or NaN, takes the text path, which writes JSON", () => {
  const odd = [
    { ...base, id: 42 as unknown as string },
    { ...base, path: undefined as unknown as string },
    { ...base, status: 404, code: 7 as unknown as string },
    { ...base, status: Number.NaN },
    { ...base, ms: Number.POSITIVE_INFINITY },
  ];
  for (const entry of odd) {
    assert.equal(written(entry), undefined, String(entry.id));
    const line = JSON.parse(requestLine(TIME, entry)) as Record<string, unknown>;
    assert.equal(line.msg, 'request');
  }
  assert.equal(
    JSON.parse(requestLine(TIME, odd[0] as RequestLogEntry)).id,
    '42',
    'written as before: the number as a string',
  );
  assert.equal(JSON.parse(requestLine(TIME, odd[3] as RequestLogEntry)).status, null);
  assert.equal(JSON.parse(requestLine(TIME, odd[4] as RequestLogEntry)).ms, null);
});

test('a first line whose time is empty still gets its head', () => {
  // In a process of its own: the head is kept per time, and the first one must not be taken for made.
  const module = resolve(__dirname, '../lib/request-log-line.js');
  const script = `const { writeRequestLine } = require(${JSON.stringify(module)});
const buffer = Buffer.alloc(512);
const end = writeRequestLine(buffer, 0, '', ${JSON.stringify(base)});
process.stdout.write(buffer.toString('utf8', 0, end));`;
  const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(child.stdout, expected('', base), child.stderr);
});
