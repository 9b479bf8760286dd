/**
 * A seeded corpus of a few thousand malformed (and some valid) requests, sent byte for byte over
 * keep-alive sockets to an in-process server. Each property of the answers is its own test, so one
 * defect does not hide another; every failure lists its first offending cases.
 *
 * "Bare" answers — a status line with no body and no Content-Type — can come only from Node's own
 * HTTP parser (its 400 for bytes that are not HTTP/1.1, e.g. a missing Host, and 431 for oversized
 * headers); they are accepted only for the cases whose bytes the parser must refuse.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { request, startServer, type TestServer } from './support.js';
import {
  generateCorpus,
  parseExact,
  RawClient,
  type ExpectedPet,
  type FuzzCase,
  type Outcome,
  type RawAnswer,
} from './fuzz-corpus.js';

const SEED = 0x5eed2026;
const COUNT = 4000;
const WORKERS = 8;
const BODY_LIMIT = 16 * 1024;
const MAX_HEADER_SIZE = 16 * 1024;
const KEY = 'test-key-0123456789abcdef';

interface Result {
  c: FuzzCase;
  outcome: Outcome;
}

interface StoredPet extends ExpectedPet {
  id: number;
}

const corpus = generateCorpus(SEED, COUNT, { key: KEY, bodyLimit: BODY_LIMIT, maxHeaderSize: MAX_HEADER_SIZE });
const prototypeNamesBefore = Object.getOwnPropertyNames(Object.prototype).sort();
let server: TestServer;
let results: Result[] = [];
let connections = 0;
let elapsedMs = 0;

before(async () => {
  // No address is ever blocked here: the corpus sends hundreds of bad keys on purpose.
  server = await startServer({ bodyLimit: BODY_LIMIT, maxHeaderSize: MAX_HEADER_SIZE, authFailureLimit: 1_000_000 });
  const started = performance.now();
  const out: Result[] = new Array<Result>(corpus.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    const client = new RawClient(server.url);
    try {
      while (next < corpus.length) {
        const c = corpus[next++] as FuzzCase;
        const outcome = await client.exchange(c.bytes, {
          head: c.head,
          timeoutMs: 5000,
          ...(c.drain ? { drainMs: 500 } : {}),
        });
        out[c.index] = { c, outcome };
      }
    } finally {
      connections += client.connections;
      client.close();
    }
  };
  await Promise.all(Array.from({ length: WORKERS }, worker));
  elapsedMs = Math.round(performance.now() - started);
  results = out;
});

after(async () => {
  await server?.close();
});

// ---------------------------------------------------------------------------------------------

function answersOf(list: readonly Result[]): Array<{ c: FuzzCase; answer: RawAnswer }> {
  const out: Array<{ c: FuzzCase; answer: RawAnswer }> = [];
  for (const { c, outcome } of list) if (outcome.kind === 'answer') out.push({ c, answer: outcome.answer });
  return out;
}

/** Node's parser answers with a status line only: no Content-Type and no body. */
function isBare(answer: RawAnswer): boolean {
  return answer.headers['content-type'] === undefined && answer.body.length === 0;
}

function describe(c: FuzzCase, detail: string): string {
  return `#${c.index} [${c.family}] ${c.label.slice(0, 90)} → ${detail}`;
}

function assertNone(problems: readonly string[], what: string): void {
  const shown = problems.slice(0, 15).join('\n  ');
  assert.equal(problems.length, 0, `${problems.length} ${what}:\n  ${shown}`);
}

function one(answer: RawAnswer, name: string): string | undefined {
  const values = answer.headers[name];
  return values === undefined ? undefined : values.join(', ');
}

// ---------------------------------------------------------------------------------------------

test('the corpus is sent in full: a few thousand requests over keep-alive connections', (t) => {
  assert.equal(results.length, COUNT);
  const families = new Map<string, number>();
  const statuses = new Map<string, number>();
  for (const { c, outcome } of results) {
    families.set(c.family, (families.get(c.family) ?? 0) + 1);
    const key =
      outcome.kind === 'answer' ? `${outcome.answer.status}${isBare(outcome.answer) ? ' (bare)' : ''}` : outcome.kind;
    statuses.set(key, (statuses.get(key) ?? 0) + 1);
  }
  t.diagnostic(
    `seed 0x${SEED.toString(16)}, ${COUNT} requests, ${WORKERS} workers, ${connections} connections, ${elapsedMs} ms`,
  );
  t.diagnostic(`families: ${[...families].map(([k, v]) => `${k}=${v}`).join(' ')}`);
  t.diagnostic(
    `answers: ${[...statuses]
      .sort()
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}`,
  );
  // Every family is present, valid creates among them.
  assert.ok(families.size >= 19, `only ${families.size} families`);
  assert.ok((families.get('valid-create') ?? 0) > 100);
});

test('every request gets exactly one answer: no dropped connection, no timeout, no second answer', () => {
  const problems: string[] = [];
  for (const { c, outcome } of results) {
    if (outcome.kind === 'dropped')
      problems.push(
        describe(
          c,
          `connection closed without an answer (${outcome.error ?? 'FIN'}) ${JSON.stringify(outcome.partial)}`,
        ),
      );
    else if (outcome.kind === 'timeout')
      problems.push(describe(c, `no answer in 5 s ${JSON.stringify(outcome.partial)}`));
    else if (outcome.extra !== 0)
      problems.push(
        describe(
          c,
          `${outcome.answer.status} followed by ${outcome.extra} more bytes (a second answer to one request)`,
        ),
      );
  }
  assertNone(problems, 'requests without exactly one answer');
});

test('no request is answered with a 5xx but a 505 for an HTTP version it does not speak', () => {
  const problems = answersOf(results)
    .filter(({ c, answer }) => (answer.status >= 500 && !c.expected.app.includes(answer.status)) || answer.status < 100)
    .map(({ c, answer }) => describe(c, `${answer.status} ${answer.body.toString('utf8').slice(0, 120)}`));
  assertNone(problems, 'server errors');
});

test('each answer is one the input allows: 2xx only for valid input, bare 400/431 only where the parser must refuse', (t) => {
  const problems: string[] = [];
  const bare = new Map<string, number>();
  for (const { c, answer } of answersOf(results)) {
    const { app, node } = c.expected;
    const ok = isBare(answer)
      ? node.includes(answer.status)
      : app.includes(answer.status) || node.includes(answer.status);
    if (isBare(answer)) bare.set(`${answer.status} ${c.label}`, (bare.get(`${answer.status} ${c.label}`) ?? 0) + 1);
    if (!ok) {
      const allowed = `app ${app.join('/') || '-'}, parser ${node.join('/') || '-'}`;
      problems.push(
        describe(
          c,
          `${answer.status}${isBare(answer) ? ' (bare)' : ''} where ${allowed} is allowed: ${answer.body.toString('utf8').slice(0, 120)}`,
        ),
      );
    }
  }
  t.diagnostic(
    `bare answers from Node's parser: ${bare.size === 0 ? 'none' : [...bare].map(([k, v]) => `${k} ×${v}`).join('; ')}`,
  );
  assertNone(problems, 'answers the input does not allow');
});

test('every 4xx from the service is an Error {code, message, status} as application/json, with its status-specific headers', () => {
  const problems: string[] = [];
  for (const { c, answer } of answersOf(results)) {
    if (isBare(answer)) continue;
    const type = one(answer, 'content-type');
    if (type !== 'application/json') problems.push(describe(c, `${answer.status} with Content-Type ${type}`));
    const text = answer.body.toString('utf8');
    if (answer.status >= 400 && answer.status < 500) {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        problems.push(describe(c, `${answer.status} body is not JSON: ${text.slice(0, 80)}`));
        continue;
      }
      const error = body as Record<string, unknown>;
      const keys =
        body !== null && typeof body === 'object' && !Array.isArray(body)
          ? Object.keys(error).sort().join(',')
          : String(body);
      if (keys !== 'code,message,status') problems.push(describe(c, `${answer.status} body has fields ${keys}`));
      else if (typeof error.code !== 'string' || !/^[a-z]+(?:_[a-z]+)*$/.test(error.code))
        problems.push(describe(c, `code ${JSON.stringify(error.code)}`));
      else if (typeof error.message !== 'string' || error.message === '')
        problems.push(describe(c, `message ${JSON.stringify(error.message)}`));
      else if (error.status !== answer.status)
        problems.push(describe(c, `HTTP ${answer.status} but body status ${JSON.stringify(error.status)}`));
      if (answer.status === 401 && one(answer, 'www-authenticate') !== 'Bearer realm="petstore"')
        problems.push(describe(c, `401 with WWW-Authenticate ${one(answer, 'www-authenticate')}`));
      if (answer.status === 405 && !/^[A-Z]+(, [A-Z]+)*$/.test(one(answer, 'allow') ?? ''))
        problems.push(describe(c, `405 with Allow ${one(answer, 'allow')}`));
    } else if (answer.status >= 200 && answer.status < 300 && !c.head) {
      try {
        JSON.parse(text);
      } catch {
        problems.push(describe(c, `${answer.status} body is not JSON: ${text.slice(0, 80)}`));
      }
      if (answer.status === 201 && !/^\/v1\/pets\/[1-9][0-9]*$/.test(one(answer, 'location') ?? ''))
        problems.push(describe(c, `201 with Location ${one(answer, 'location')}`));
    }
  }
  assertNone(problems, 'malformed answers');
});

test('every answer from the service carries X-Content-Type-Options: nosniff and Cache-Control: no-store', () => {
  const problems: string[] = [];
  for (const { c, answer } of answersOf(results)) {
    if (isBare(answer)) continue; // Node's parser-level answers: see the test on allowed answers
    if (one(answer, 'x-content-type-options') !== 'nosniff')
      problems.push(
        describe(c, `${answer.status} with X-Content-Type-Options ${one(answer, 'x-content-type-options')}`),
      );
    if (one(answer, 'cache-control') !== 'no-store')
      problems.push(describe(c, `${answer.status} with Cache-Control ${one(answer, 'cache-control')}`));
  }
  assertNone(problems, 'answers without the security headers');
});

test('no answer reveals a stack trace, a file path or the Node version', () => {
  const leaks: Array<[string, RegExp]> = [
    ['a stack frame', /\bat (?:async )?[\w$.<>[\] ]+ \(|\n\s+at \S/],
    ['a source location', /\.(?:[cm]?js|ts):\d+/],
    [
      'a file path',
      /(?:\/work\/|\/home\/|\/tmp\/|\/usr\/|\/var\/|\/opt\/|node_modules|node:internal|file:\/\/|[A-Za-z]:\\)/,
    ],
    ['the Node version', new RegExp(`${process.version.replaceAll('.', '\\.')}|\\bnode(?:\\.js|js)?/v?\\d`, 'i')],
    ['an error class', /\b(?:TypeError|RangeError|ReferenceError|URIError|SyntaxError|Error:)/],
  ];
  const problems: string[] = [];
  for (const { c, answer } of answersOf(results)) {
    const text = `${answer.head}\r\n\r\n${answer.body.toString('utf8')}`;
    for (const [what, pattern] of leaks) {
      const match = pattern.exec(text);
      if (match !== null)
        problems.push(
          describe(
            c,
            `${answer.status} reveals ${what}: ${JSON.stringify(text.slice(Math.max(0, match.index - 40), match.index + 60))}`,
          ),
        );
    }
    for (const name of ['server', 'x-powered-by'])
      if (answer.headers[name] !== undefined) problems.push(describe(c, `${name}: ${one(answer, name)}`));
  }
  assertNone(problems, 'revealing answers');
});

test('the server is still up and serving after the corpus', async () => {
  assert.equal(server.running.server.listening, true);
  const health = await request(server.url, 'GET', '/healthz', { auth: false });
  assert.equal(health.status, 200);
  const list = await request(server.url, 'GET', '/v1/pets?limit=1', { auth: KEY });
  assert.equal(list.status, 200);
  assert.ok(Array.isArray(list.json));
});

test('the store holds exactly the pets acknowledged with 201, each as sent (categoryId compared digit for digit)', async (t) => {
  const problems: string[] = [];
  const acknowledged = new Map<number, StoredPet>();
  for (const { c, answer } of answersOf(results)) {
    if (answer.status !== 201) continue;
    const pet = parseExact(answer.body.toString('utf8')) as StoredPet;
    const expected = c.expected.pet;
    if (expected === undefined) {
      problems.push(describe(c, 'a 201 for a case with no expected pet'));
      continue;
    }
    const { id, ...fields } = pet;
    try {
      assert.deepEqual(fields, expected);
    } catch {
      problems.push(
        describe(
          c,
          `201 echoed ${JSON.stringify(fields).slice(0, 100)}, sent ${JSON.stringify(expected).slice(0, 100)}`,
        ),
      );
    }
    if (one(answer, 'location') !== `/v1/pets/${id}`)
      problems.push(describe(c, `Location ${one(answer, 'location')} for id ${id}`));
    if (acknowledged.has(id)) problems.push(describe(c, `id ${id} acknowledged twice`));
    acknowledged.set(id, pet);
  }
  assertNone(problems, 'wrong 201 answers');

  // Every page, following the cursor, until the service says there is no next page.
  const listed: StoredPet[] = [];
  let after = 0;
  let pages = 0;
  for (;;) {
    const page = await request(server.url, 'GET', `/v1/pets?limit=100${after > 0 ? `&after=${after}` : ''}`, {
      auth: KEY,
    });
    assert.equal(page.status, 200, page.text);
    const pets = parseExact(page.text) as StoredPet[];
    listed.push(...pets);
    pages++;
    const link = page.headers.link;
    if (Array.isArray(link)) assert.fail('more than one Link header');
    if (link === undefined) break;
    assert.equal(pets.length, 100, 'a page with a next link is full');
    after = (pets.at(-1) as StoredPet).id;
    assert.match(link, new RegExp(`[?&]after=${after}[&>]`));
    assert.ok(pages < 1000, 'pagination does not end');
  }
  if (listed.length > 0) {
    const tail = await request(server.url, 'GET', `/v1/pets?limit=100&after=${(listed.at(-1) as StoredPet).id}`, {
      auth: KEY,
    });
    assert.equal(tail.text, '[]', 'no pets after the last page');
  }
  t.diagnostic(`${acknowledged.size} pets acknowledged, ${listed.length} listed over ${pages} pages`);

  const ids = listed.map((p) => p.id);
  assert.deepEqual(
    ids,
    [...ids].sort((a, b) => a - b),
    'listed in ascending id order',
  );
  assert.equal(new Set(ids).size, ids.length, 'no pet listed twice');
  const byId = (pets: Iterable<StoredPet>): StoredPet[] => [...pets].sort((a, b) => a.id - b.id);
  assert.deepEqual(byId(listed), byId(acknowledged.values()));
  assert.ok(acknowledged.size > 100, 'the corpus created pets');
});

test('after the prototype-key requests Object.prototype is unpolluted', () => {
  const prototypeCases = results.filter(({ c }) => c.family === 'prototype-keys');
  assert.ok(prototypeCases.length > 50, `${prototypeCases.length} prototype-key cases`);
  for (const { c, outcome } of prototypeCases) {
    assert.equal(outcome.kind, 'answer', describe(c, outcome.kind));
    if (outcome.kind === 'answer')
      assert.equal(outcome.answer.status, 400, describe(c, outcome.answer.body.toString('utf8')));
  }
  assert.equal(({} as Record<string, unknown>).polluted, undefined);
  assert.equal(Object.hasOwn(Object.prototype, 'polluted'), false);
  assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeNamesBefore);
});

test('__proto__, constructor and prototype keys are a 400 naming the unknown field, and change nothing', async () => {
  const fresh = await startServer();
  try {
    const post = (body: string) =>
      fresh.request('POST', '/v1/pets', { headers: [['content-type', 'application/json']], body });
    for (const key of ['__proto__', 'constructor', 'prototype']) {
      for (const value of [
        '{"polluted":"yes"}',
        '{"prototype":{"polluted":"yes"}}',
        '{"__proto__":{"polluted":"yes"}}',
        'null',
        '"x"',
      ]) {
        for (const body of [
          `{"${key}":${value},"name":"x","categoryId":1}`,
          `{"name":"x","categoryId":1,"${key}":${value}}`,
          `{"${key}":${value}}`,
        ]) {
          const res = await post(body);
          assert.equal(res.status, 400, body);
          assert.deepEqual(Object.keys(res.json as object).sort(), ['code', 'message', 'status']);
          const error = res.json as { code: string; message: string; status: number };
          assert.equal(error.code, 'invalid_request', body);
          assert.equal(error.status, 400);
          assert.match(error.message, new RegExp(`unknown field "${key}"`), body);
        }
      }
    }
    // The escaped spelling of __proto__ is the same key.
    const escaped = await post('{"name":"x","categoryId":1,"__pro\\u0074o__":{"polluted":"yes"}}');
    assert.equal(escaped.status, 400);
    assert.match((escaped.json as { message: string }).message, /unknown field "__proto__"/);

    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.deepEqual(Object.getOwnPropertyNames(Object.prototype).sort(), prototypeNamesBefore);
    const list = await fresh.request('GET', '/v1/pets');
    assert.equal(list.text, '[]', 'nothing was stored');
    // As a value rather than a key, "__proto__" is an ordinary name.
    const named = await post('{"name":"__proto__","categoryId":1}');
    assert.equal(named.status, 201);
    assert.deepEqual(named.json, { id: 1, name: '__proto__', categoryId: 1 });
  } finally {
    await fresh.close();
  }
});
