/**
 * A step of the wall clock (an NTP correction, a restored VM) changes no interval: key reloads, the
 * bad-key limiter's blocks and quota windows are measured on the monotonic clock. The process's
 * Date.now is shifted by an hour, back and forth, under a server running in this process.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test, type TestContext } from 'node:test';
import { connect } from 'node:net';
import { startServer, tempDir, TEST_KEY, waitFor, type TestServer } from './support.js';

const HOUR = 3_600_000;
// operations.md: a revoked key is refused within a second; this leaves half a second for the test.
const RELOAD_BOUND_MS = 1500;
const FILE_KEY = 'clock-step-file-key-0123456789';

/** Shifts this process's Date.now by `offsetMs` from the real clock (not cumulative) until the test ends. */
function setWallClock(t: TestContext, offsetMs: number): void {
  const real = (Date as unknown as { realNow?: () => number }).realNow ?? Date.now;
  (Date as unknown as { realNow?: () => number }).realNow = real;
  Date.now = () => real() + offsetMs;
  t.after(() => {
    Date.now = real;
  });
}

async function serve(t: TestContext, options: Parameters<typeof startServer>[0] = {}): Promise<TestServer> {
  // The directory is removed by server.close(), once the server has stopped.
  const server = await startServer({ dataDir: await tempDir('petstore-clock-'), ...options });
  t.after(() => server.close());
  return server;
}

/** Writes keys.json whole with `keys`, as `keys create` and `keys revoke` do (a new file renamed over the old). */
async function writeKeys(dir: string, keys: Array<{ id: string; key: string }>): Promise<void> {
  const records = keys.map(({ id, key }) => ({
    id,
    label: id,
    created: '2026-01-01T00:00:00.000Z',
    sha256: createHash('sha256').update(key).digest('hex'),
  }));
  await writeFile(join(dir, 'keys.json.tmp'), JSON.stringify({ format: 'petstore-keys/2', keys: records }), {
    mode: 0o600,
  });
  await rename(join(dir, 'keys.json.tmp'), join(dir, 'keys.json'));
}

test('a key revoked after the wall clock is set back an hour is refused within the reload delay', async (t) => {
  const dir = await tempDir('petstore-clock-');
  await writeKeys(dir, [{ id: 'k1', key: FILE_KEY }]);
  const server = await serve(t, { dataDir: dir });
  assert.equal((await server.request('GET', '/v1/pets', { auth: FILE_KEY })).status, 200);

  setWallClock(t, -HOUR);
  assert.equal(
    (await server.request('GET', '/v1/pets', { auth: FILE_KEY })).status,
    200,
    'a request at the stepped clock',
  );
  await writeKeys(dir, []);
  const started = performance.now();
  let status = 0;
  while (performance.now() - started <= RELOAD_BOUND_MS) {
    status = (await server.request('GET', '/v1/pets', { auth: FILE_KEY })).status;
    if (status === 401) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal(status, 401, `the revoked key is refused within ${RELOAD_BOUND_MS} ms of the revocation`);
  assert.equal((await server.request('GET', '/v1/pets', { auth: TEST_KEY })).status, 200, 'the other key still works');
});

test('a blocked address stays blocked for its minute, whichever way the wall clock is stepped', async (t) => {
  const server = await serve(t, { authFailureLimit: 3 });
  for (let i = 0; i < 3; i++)
    assert.equal((await server.request('GET', '/v1/pets', { auth: 'wrong-key-0123456789' })).status, 401);
  const blocked = await server.request('GET', '/v1/pets', { auth: TEST_KEY });
  assert.equal(blocked.status, 429);

  setWallClock(t, -HOUR);
  const back = await server.request('GET', '/v1/pets', { auth: TEST_KEY });
  assert.equal(back.status, 429, 'still blocked with the clock an hour back');
  assert.ok(
    Number(back.headers['retry-after']) <= 60,
    `Retry-After is within the minute, not an hour more: ${back.headers['retry-after']}`,
  );

  setWallClock(t, HOUR);
  const ahead = await server.request('GET', '/v1/pets', { auth: TEST_KEY });
  assert.equal(ahead.status, 429, 'still blocked with the clock an hour ahead');
  assert.ok(Number(ahead.headers['retry-after']) <= 60, `Retry-After: ${ahead.headers['retry-after']}`);
});

test('a used quota is not whole again when the wall clock is stepped back or ahead', async (t) => {
  const server = await serve(t, { rateLimit: { requests: 2, seconds: 60 } });
  for (let i = 0; i < 2; i++) assert.equal((await server.request('GET', '/v1/pets', { auth: TEST_KEY })).status, 200);
  assert.equal((await server.request('GET', '/v1/pets', { auth: TEST_KEY })).status, 429);

  for (const offset of [-HOUR, HOUR]) {
    setWallClock(t, offset);
    const res = await server.request('GET', '/v1/pets', { auth: TEST_KEY });
    assert.equal(res.status, 429, `the quota is still used with the clock moved ${offset / HOUR} h`);
    assert.match(String(res.headers.ratelimit), /;r=0;t=([1-9]|[1-5][0-9]|60)$/, 'the window ends within its minute');
  }
});

test(
  'the stop gives a connection accepted just before it its grace on the monotonic clock: ' +
    'a request sent as the stop begins is answered 503, not cut',
  async (t) => {
    const server = await serve(t);
    setWallClock(t, -HOUR);
    const socket = connect(Number(new URL(server.url).port), '127.0.0.1');
    t.after(() => socket.destroy());
    let data = '';
    socket.on('data', (chunk: Buffer) => (data += chunk.toString('latin1')));
    const closed = new Promise((resolve) => socket.once('close', resolve));
    socket.on('error', () => {}); // a reset is what the test looks for
    await new Promise((resolve) => socket.once('connect', resolve));
    let held = 0;
    await waitFor(
      () => {
        server.running.server.getConnections((_error, count) => (held = count));
        return held === 1;
      },
      5000,
      'the server holds the connection',
    );
    // The stop sweeps silent connections at once: one accepted a moment ago still has its grace.
    const stopped = server.running.close();
    socket.write('GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n');
    await closed;
    await stopped;
    assert.match(data, /^HTTP\/1\.1 503 /, `answered: ${JSON.stringify(data.slice(0, 40))}`);
    assert.match(data, /\r\nconnection: close\r\n/i);
  },
);
