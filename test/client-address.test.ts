/**
 * `--trust-proxy`: the client's address from X-Forwarded-For or Forwarded, only on connections from
 * a trusted proxy. Connections come from other loopback addresses (127.0.0.2, 127.0.0.3) to play the
 * proxy and a client that connects directly.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { test, type TestContext } from 'node:test';
import { startServer, TEST_KEY, type TestServer } from './support.js';
import type { Logger, RequestLogEntry } from './package.js';

const PROXY = '127.0.0.2';
const STRANGER = '127.0.0.3';

interface Served {
  server: TestServer;
  lines: RequestLogEntry[];
}

async function serve(t: TestContext, trustProxy: string | undefined, authFailureLimit = 30): Promise<Served> {
  const lines: RequestLogEntry[] = [];
  const logger: Logger = { request: (entry) => void lines.push(entry), info() {}, error() {} };
  const server = await startServer({ logger, authFailureLimit, ...(trustProxy === undefined ? {} : { trustProxy }) });
  t.after(() => server.close());
  return { server, lines };
}

/** A GET of /v1/pets from `from`, with the headers given; its status. */
function get(server: TestServer, from: string, headers: Record<string, string>, key = TEST_KEY): Promise<number> {
  const url = new URL(server.url);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        path: '/v1/pets',
        localAddress: from,
        agent: false,
        headers: { ...headers, authorization: `Bearer ${key}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The `client` of the request log line of one GET sent with these headers. */
async function clientOf(served: Served, from: string, headers: Record<string, string>): Promise<string | undefined> {
  const before = served.lines.length;
  assert.equal(await get(served.server, from, headers), 200);
  assert.equal(served.lines.length, before + 1);
  return served.lines.at(-1)?.client;
}

test('without --trust-proxy every request line names the peer, and forwarding headers are ignored', async (t) => {
  const served = await serve(t, undefined);
  assert.equal(await clientOf(served, PROXY, {}), PROXY);
  assert.equal(
    await clientOf(served, PROXY, { 'x-forwarded-for': '203.0.113.9', forwarded: 'for=198.51.100.1' }),
    PROXY,
  );
});

test('headers from a peer that is not a trusted proxy are ignored: a client cannot name another address', async (t) => {
  const served = await serve(t, PROXY, 3);
  assert.equal(await clientOf(served, STRANGER, { 'x-forwarded-for': '203.0.113.9' }), STRANGER);
  assert.equal(await clientOf(served, STRANGER, { forwarded: 'for=203.0.113.9' }), STRANGER);
  // Nor can it escape the failed-key limit by naming a new address with each guess.
  for (let i = 0; i < 3; i++)
    assert.equal(await get(served.server, STRANGER, { 'x-forwarded-for': `203.0.113.${i}` }, 'wrong-key'), 401);
  assert.equal(await get(served.server, STRANGER, { 'x-forwarded-for': '203.0.113.77' }), 429);
});

test('from a trusted proxy the client is the right-most hop that is not itself trusted, through a chain of two proxies', async (t) => {
  const served = await serve(t, `${PROXY}, 10.0.0.0/8`);
  assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': '203.0.113.9' }), '203.0.113.9');
  // 198.51.100.1 is what the client itself claimed; 203.0.113.9 is what the outer proxy (10.1.2.3) saw.
  assert.equal(
    await clientOf(served, PROXY, { 'x-forwarded-for': '198.51.100.1, 203.0.113.9, 10.1.2.3' }),
    '203.0.113.9',
  );
  assert.equal(
    await clientOf(served, PROXY, { 'x-forwarded-for': '10.9.9.9, 10.1.2.3' }),
    '10.9.9.9',
    'every hop trusted: the farthest',
  );
  assert.equal(
    await clientOf(served, PROXY, { 'x-forwarded-for': 'garbage, 10.1.2.3' }),
    '10.1.2.3',
    'a hop that is no address: the proxy that named it',
  );
  assert.equal(await clientOf(served, PROXY, {}), PROXY, 'no header: the proxy itself');
});

test('Forwarded (RFC 7239): quoted, IPv6 in brackets with a port, other parameters, several elements; X-Forwarded-For wins', async (t) => {
  const served = await serve(t, `${PROXY},10.0.0.0/8`);
  assert.equal(await clientOf(served, PROXY, { forwarded: 'for="[::1]:1234"' }), '::1');
  assert.equal(
    await clientOf(served, PROXY, { forwarded: 'For="[2001:DB8:cafe::17]:4711";proto=https;by=10.0.0.1' }),
    '2001:db8:cafe::17',
  );
  assert.equal(
    await clientOf(served, PROXY, { forwarded: 'for=192.0.2.60;proto=http, for="198.51.100.17:8080", for=10.1.2.3' }),
    '198.51.100.17',
  );
  assert.equal(
    await clientOf(served, PROXY, { forwarded: 'for="a,b;c", for=192.0.2.43' }),
    '192.0.2.43',
    'separators inside quotes',
  );
  assert.equal(await clientOf(served, PROXY, { forwarded: 'for=unknown' }), PROXY);
  assert.equal(
    await clientOf(served, PROXY, { forwarded: 'for=192.0.2.60', 'x-forwarded-for': '203.0.113.9' }),
    '203.0.113.9',
  );
  assert.equal(
    await clientOf(served, PROXY, { 'x-forwarded-for': '2001:db8::1, ::ffff:10.1.2.3' }),
    '2001:db8::1',
    'IPv6 and IPv4-mapped hops',
  );
});

test('one address written in several forms is one client in the log: mapped, upper case, a zone, zeros written out', async (t) => {
  const served = await serve(t, PROXY);
  for (const hop of ['::FFFF:203.0.113.9', '::ffff:203.0.113.9%eth0', '::ffff:cb00:7109', '[::ffff:203.0.113.9]:80'])
    assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': hop }), '203.0.113.9', hop);
  for (const hop of ['2001:DB8:0:0::1', '2001:0db8:0000:0000:0000:0000:0000:0001', '2001:db8::1%eth0'])
    assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': hop }), '2001:db8::1', hop);
  assert.equal(await clientOf(served, PROXY, { forwarded: 'for="[2001:DB8::0:1]"' }), '2001:db8::1');
});

test('a chain of trusted hops is followed for 16 hops at most: past them the client is the farthest hop looked at', async (t) => {
  const served = await serve(t, PROXY);
  const chain = (trusted: number): string => ['203.0.113.9', ...Array<string>(trusted).fill(PROXY)].join(', ');
  assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': chain(15) }), '203.0.113.9', '15 trusted hops');
  // Each hop costs a look-up in the trusted list (~25 µs): 4,000 of them in a 16 kB header cost 100 ms a request.
  assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': chain(16) }), PROXY, '16 trusted hops');
  assert.equal(await clientOf(served, PROXY, { 'x-forwarded-for': chain(1000) }), PROXY, '1,000 trusted hops');
});

test("behind one trusted proxy, one client's wrong keys no longer lock out another client", async (t) => {
  const served = await serve(t, PROXY, 3);
  for (let i = 0; i < 3; i++)
    assert.equal(await get(served.server, PROXY, { 'x-forwarded-for': '203.0.113.9' }, 'wrong-key'), 401);
  assert.equal(
    await get(served.server, PROXY, { 'x-forwarded-for': '203.0.113.9' }),
    429,
    'the guessing client is blocked',
  );
  assert.equal(
    await get(served.server, PROXY, { 'x-forwarded-for': '198.51.100.1' }),
    200,
    'another client behind the same proxy is not',
  );
  const blocked = served.lines.filter((line) => line.status === 429);
  assert.deepEqual(
    blocked.map((line) => [line.client, line.code]),
    [['203.0.113.9', 'too_many_requests']],
  );
});

test('a --trust-proxy entry that is no address or network is refused at start, naming it', async () => {
  for (const bad of ['10.0.0.0/33', 'example.com', '10.0.0.1/8/2', '', '::1/129']) {
    const started = async (): Promise<void> => (await startServer({ trustProxy: bad })).close();
    await assert.rejects(
      started,
      (error: Error) => error instanceof TypeError && /trusted prox/.test(error.message),
      bad,
    );
  }
});
