/**
 * Per-key quotas: RateLimit-Policy and RateLimit (draft-ietf-httpapi-ratelimit-headers-11) on every
 * answer to an authenticated request, r counting down, 429 rate_limited with Retry-After past the
 * quota, the quota whole again when its window ends; the interface description and health never
 * counted; memory bounded however many keys come and go.
 */
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { test } from 'node:test';
import { parseQuota, QuotaCounter } from '#dist/auth/quota.js';
import { request, runCli, spawnServerFor, startServer, tempDirFor, type Response } from './support.js';

const KEY = 'quota-key-0123456789abcdef';
const OTHER = 'other-key-0123456789abcdef';
const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

// RFC 9651 lists of one Item, a String, with Integer parameters, as the draft defines them.
const POLICY = /^"per-key";q=([1-9][0-9]*);w=([1-9][0-9]*)$/;
const LIMIT = /^"per-key";r=(0|[1-9][0-9]*);t=([1-9][0-9]*)$/;

/** r and t of an answer's RateLimit field, after checking both fields' syntax exactly and the policy's numbers. */
function rateLimit(res: Response, quota: { q: number; w: number }): { r: number; t: number } {
  const policy = res.headers['ratelimit-policy'];
  const limit = res.headers.ratelimit;
  assert.equal(typeof policy, 'string', `RateLimit-Policy on a ${res.status}`);
  assert.equal(typeof limit, 'string', `RateLimit on a ${res.status}`);
  assert.match(policy as string, POLICY);
  assert.equal(policy, `"per-key";q=${quota.q};w=${quota.w}`);
  const [, r, t] = LIMIT.exec(limit as string) ?? assert.fail(`RateLimit: ${limit}`);
  assert.equal(res.rawHeaders.filter((h) => /^ratelimit(-policy)?$/i.test(h)).length, 2, 'each field once');
  return { r: Number(r), t: Number(t) };
}

/** What a take found, copied: the counter answers with the key's window, which the next take changes. */
function take(
  counter: QuotaCounter,
  key: string,
  policy: { requests: number; seconds: number },
  now: number,
): { admitted: boolean; remaining: number; resetSeconds: number } {
  const { admitted, remaining, resetSeconds } = counter.take(key, policy, now);
  return { admitted, remaining, resetSeconds };
}

test('QuotaCounter: a window admits q requests, r counting down to 0, then refuses until it ends; t rounds up and is never 0', () => {
  const counter = new QuotaCounter();
  const policy = { requests: 3, seconds: 10 };
  assert.deepEqual(take(counter, 'a', policy, 1000), { admitted: true, remaining: 2, resetSeconds: 10 });
  assert.deepEqual(
    take(counter, 'a', policy, 1500),
    { admitted: true, remaining: 1, resetSeconds: 10 },
    '9.5 s left: 10',
  );
  assert.deepEqual(take(counter, 'a', policy, 2000), { admitted: true, remaining: 0, resetSeconds: 9 });
  assert.deepEqual(
    take(counter, 'a', policy, 2001),
    { admitted: false, remaining: 0, resetSeconds: 9 },
    'past the quota',
  );
  assert.deepEqual(
    take(counter, 'a', policy, 10_999),
    { admitted: false, remaining: 0, resetSeconds: 1 },
    '1 ms left: 1, not 0',
  );
  assert.deepEqual(
    take(counter, 'b', policy, 10_999),
    { admitted: true, remaining: 2, resetSeconds: 10 },
    'another key has its own window',
  );
  assert.deepEqual(
    take(counter, 'a', policy, 11_000),
    { admitted: true, remaining: 2, resetSeconds: 10 },
    'refilled when the window ends',
  );
});

test('QuotaCounter: refused requests are not counted, and a clock set back starts a new window instead of blocking', () => {
  const counter = new QuotaCounter();
  const policy = { requests: 1, seconds: 60 };
  assert.equal(take(counter, 'a', policy, 100_000).admitted, true);
  for (let i = 0; i < 5; i++)
    assert.deepEqual(
      take(counter, 'a', policy, 100_001 + i),
      { admitted: false, remaining: 0, resetSeconds: 60 },
      'r stays 0',
    );
  assert.deepEqual(
    take(counter, 'a', policy, 160_000),
    { admitted: true, remaining: 0, resetSeconds: 60 },
    'exactly one window later',
  );
  assert.deepEqual(
    take(counter, 'a', policy, 50_000),
    { admitted: true, remaining: 0, resetSeconds: 60 },
    'the clock went back 110 s',
  );
});

test('QuotaCounter: memory stays bounded while 200,000 keys come and go, each in a window of its own', () => {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  const counter = new QuotaCounter();
  const policy = { requests: 5, seconds: 1 };
  gc();
  const before = process.memoryUsage().heapUsed;
  // One key a second: every window has ended when the next key comes, as with keys revoked or idle.
  for (let i = 0; i < 200_000; i++) take(counter, `revoked-key-${i}`, policy, i * 1000);
  gc();
  const grown = process.memoryUsage().heapUsed - before;
  // Kept, 200,000 entries would take over 20 MB; swept, at most a couple of thousand remain.
  assert.ok(grown < 4 * 1024 * 1024, `the heap grew by ${(grown / 1024 / 1024).toFixed(1)} MB`);
  // The counter in use after the measurement, or it would have been collected whole.
  assert.equal(take(counter, 'revoked-key-199999', policy, 200_000 * 1000 - 1).remaining, 3);
});

test('a rate limit is <requests>/<seconds> with both whole and in range', () => {
  assert.deepEqual(parseQuota('100/60'), { requests: 100, seconds: 60 });
  assert.deepEqual(parseQuota('1/31622400'), { requests: 1, seconds: 31_622_400 });
  for (const bad of [
    '',
    '100',
    '100/',
    '/60',
    '0/60',
    '100/0',
    '1.5/60',
    '-1/60',
    '100/60s',
    ' 100/60',
    '1000000001/1',
    '1/31622401',
    '1e3/60',
  ]) {
    assert.throws(() => parseQuota(bad), TypeError, bad);
  }
});

test('every answer to an authenticated request carries RateLimit-Policy and RateLimit, r counting down, whatever its status', async (t) => {
  const server = await startServer({ keys: [KEY, `${OTHER}:pets:read`], rateLimit: { requests: 10, seconds: 60 } });
  t.after(() => server.close());
  const answers = [
    await server.request('GET', '/v1/pets', { auth: KEY }),
    await server.request('POST', '/v1/pets', {
      auth: KEY,
      headers: JSON_HEADERS,
      body: '{"name":"Rex","categoryId":1}',
    }),
    await server.request('GET', '/v1/pets/1', { auth: KEY }),
    await server.request('HEAD', '/v1/pets/1', { auth: KEY }),
    await server.request('GET', '/v1/pets/99', { auth: KEY }),
    await server.request('GET', '/v1/pets?limit=0', { auth: KEY }),
    await server.request('DELETE', '/v1/pets', { auth: KEY }),
    await server.request('GET', '/v1/nothing', { auth: KEY }),
  ];
  assert.deepEqual(
    answers.map((a) => a.status),
    [200, 201, 200, 200, 404, 400, 405, 404],
  );
  answers.forEach((res, i) => {
    const { r, t: seconds } = rateLimit(res, { q: 10, w: 60 });
    assert.equal(r, 9 - i, `answer ${i + 1} (${res.status})`);
    assert.ok(seconds >= 59 && seconds <= 60, `t=${seconds}`);
  });
  const forbidden = await server.request('POST', '/v1/pets', {
    auth: OTHER,
    headers: JSON_HEADERS,
    body: '{"name":"x","categoryId":1}',
  });
  assert.equal(forbidden.status, 403);
  assert.equal(rateLimit(forbidden, { q: 10, w: 60 }).r, 9, 'another key has a quota of its own; a 403 is counted too');

  for (const res of [
    await server.request('GET', '/v1/pets', { auth: false }),
    await server.request('GET', '/v1/pets', { auth: 'not-a-key-0123456789' }),
    await server.request('GET', '/healthz', { auth: KEY }),
    await server.request('GET', '/readyz', { auth: KEY }),
    await server.request('GET', '/v1/openapi.json', { auth: KEY }),
  ]) {
    assert.equal(res.headers.ratelimit, undefined, `no RateLimit on a ${res.status} to an unauthenticated request`);
    assert.equal(res.headers['ratelimit-policy'], undefined);
  }
});

test('without --rate-limit no answer carries a RateLimit field and nothing is refused for quota', async (t) => {
  const server = await startServer({ keys: [KEY] });
  t.after(() => server.close());
  for (let i = 0; i < 50; i++) {
    const res = await server.request('GET', '/v1/pets', { auth: KEY });
    assert.equal(res.status, 200);
    assert.equal(res.headers.ratelimit, undefined);
    assert.equal(res.headers['ratelimit-policy'], undefined);
  }
});

test('a quota runs out (429 rate_limited, Retry-After equal to t) and comes back when its window ends', async (t) => {
  const server = await startServer({ keys: [KEY, OTHER], rateLimit: { requests: 3, seconds: 3 } });
  t.after(() => server.close());
  for (let attempt = 1; ; attempt++) {
    const started = Date.now();
    const first = await server.request('GET', '/v1/pets', { auth: KEY });
    const rest = [
      await server.request('GET', '/v1/pets', { auth: KEY }),
      await server.request('GET', '/v1/pets', { auth: KEY }),
    ];
    const refused = await server.request('POST', '/v1/pets', {
      auth: KEY,
      headers: JSON_HEADERS,
      body: '{"name":"late","categoryId":1}',
    });
    // A machine so loaded that four local requests took a whole window has proved nothing: again.
    if (Date.now() - started >= 2000 && attempt < 3) {
      await new Promise((r) => setTimeout(r, 3100));
      continue;
    }
    assert.deepEqual(
      [first, ...rest].map((res) => rateLimit(res, { q: 3, w: 3 }).r),
      [2, 1, 0],
    );
    assert.equal(refused.status, 429, refused.text);
    assert.deepEqual(refused.json, {
      code: 'rate_limited',
      message: "this API key's quota of 3 requests per 3 s is used up; retry after Retry-After seconds",
      status: 429,
    });
    const { r, t: seconds } = rateLimit(refused, { q: 3, w: 3 });
    assert.equal(r, 0);
    assert.ok(seconds >= 1 && seconds <= 3, `t=${seconds}`);
    assert.equal(refused.headers['retry-after'], String(seconds), 'Retry-After is the end of the window, as t says');
    assert.equal(
      (await server.request('GET', '/v1/pets', { auth: OTHER })).status,
      200,
      'another key is not limited by this one',
    );
    assert.equal(
      ((await server.request('GET', '/v1/pets', { auth: OTHER })).json as unknown[]).length,
      0,
      'the refused create stored nothing',
    );

    await new Promise((r) => setTimeout(r, seconds * 1000));
    const back = await server.request('POST', '/v1/pets', {
      auth: KEY,
      headers: JSON_HEADERS,
      body: '{"name":"on time","categoryId":1}',
    });
    assert.equal(back.status, 201, 'after Retry-After seconds the quota is whole again');
    assert.deepEqual(rateLimit(back, { q: 3, w: 3 }), { r: 2, t: 3 });
    return;
  }
});

test('/healthz, /readyz and the interface description are never counted, also with a key', async (t) => {
  const server = await startServer({ keys: [KEY], rateLimit: { requests: 2, seconds: 600 } });
  t.after(() => server.close());
  for (let i = 0; i < 5; i++) {
    for (const path of ['/healthz', '/readyz', '/v1/openapi.json']) {
      assert.equal((await server.request('GET', path, { auth: KEY })).status, 200, path);
      assert.equal((await server.request('GET', path, { auth: false })).status, 200, path);
    }
  }
  assert.equal(
    rateLimit(await server.request('GET', '/v1/pets', { auth: KEY }), { q: 2, w: 600 }).r,
    1,
    'the first counted request',
  );
});

test("a key created with its own --rate-limit is held to it, with or without a server quota; other keys to the server's", async (t) => {
  const dir = await tempDirFor(t, 'petstore-quota-');
  const created = await runCli(['keys', 'create', '--label', 'page', '--rate-limit', '2/600', '--data-dir', dir]);
  assert.equal(created.code, 0, created.stderr);
  assert.match(
    created.stdout,
    /^created key \S+ \(page\); scopes pets:read, pets:write; rate limit 2 requests per 600 s; it is shown only this once:$/m,
  );
  const own = created.stdout.trim().split('\n').at(-1) as string;
  for (const rateLimitOption of [undefined, { requests: 100, seconds: 60 }]) {
    const server = await startServer({
      dataDir: dir,
      keys: [KEY],
      ...(rateLimitOption === undefined ? {} : { rateLimit: rateLimitOption }),
    });
    try {
      const statuses = [];
      for (let i = 0; i < 3; i++) {
        const res = await server.request('GET', '/v1/pets', { auth: own });
        statuses.push(res.status);
        rateLimit(res, { q: 2, w: 600 });
      }
      assert.deepEqual(statuses, [200, 200, 429]);
      const other = await server.request('GET', '/v1/pets', { auth: KEY });
      if (rateLimitOption === undefined)
        assert.equal(other.headers.ratelimit, undefined, 'no server quota: the env key is not counted');
      else assert.equal(rateLimit(other, { q: 100, w: 60 }).r, 99);
    } finally {
      await server.stop();
    }
  }
});

test('--rate-limit and PETSTORE_RATE_LIMIT set the quota; a malformed one exits 2 saying the form', async (t) => {
  const dir = await tempDirFor(t, 'petstore-quota-');
  const server = await spawnServerFor(t, ['--data-dir', dir], { PETSTORE_API_KEYS: KEY, PETSTORE_RATE_LIMIT: '7/30' });
  rateLimit(await request(server.url, 'GET', '/v1/pets', { auth: KEY }), { q: 7, w: 30 });
  // The server's variable is not a key's own quota: only keys create's flag gives one.
  assert.equal(
    (await runCli(['keys', 'create', '--label', 'plain', '--data-dir', dir], { PETSTORE_RATE_LIMIT: '7/30' })).code,
    0,
  );
  assert.match((await runCli(['keys', 'list', '--data-dir', dir])).stdout, / {2}default {2}plain$/m);
  for (const [args, env, stderr] of [
    [
      ['--rate-limit', '100'],
      {},
      'cannot start: --rate-limit: a rate limit is <requests>/<seconds>, such as 100/60, got "100"',
    ],
    [
      [],
      { PETSTORE_RATE_LIMIT: '0/60' },
      "cannot start: PETSTORE_RATE_LIMIT: a rate limit's requests must be an integer from 1 to 1000000000, got 0",
    ],
    [
      ['keys', 'create', '--rate-limit', '5/0'],
      {},
      "keys create failed: --rate-limit: a rate limit's seconds must be an integer from 1 to 31622400, got 0",
    ],
  ] as const) {
    const run = await runCli([...args, '--port', '0', '--data-dir', dir], { PETSTORE_API_KEYS: KEY, ...env });
    assert.equal(run.code, 2, run.stderr);
    assert.equal(run.stderr.split('\n')[0], stderr);
  }
});

test('QuotaCounter: t of a new window is the window, at the large fractional monotonic times of a machine up for hours', () => {
  const counter = new QuotaCounter();
  // About 4.5 hours of uptime: at a quarter of such times (now + 600,000) - now exceeds 600,000 by nanoseconds.
  for (let i = 0; i < 200; i++) {
    const now = 16_234_567.891 + i * 0.0137;
    assert.equal(take(counter, `k${i}`, { requests: 2, seconds: 600 }, now).resetSeconds, 600, `at ${now}`);
  }
});
