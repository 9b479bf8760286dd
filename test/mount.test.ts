/**
 * Where the service is mounted: a `basePath` prefix for every route and header, `publicUrls` for the
 * OpenAPI `servers`, and what an unknown path says.
 */
import assert from 'node:assert/strict';
import { test, type TestContext } from 'node:test';
import { createPetstore, silentLoggerForTests } from './package.js';
import { runCli, spawnServerFor, startServer, tempDirFor, TEST_KEY, type TestServer } from './support.js';

type Json = Record<string, unknown>;

async function serve(t: TestContext, options: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(options);
  t.after(() => server.close());
  return server;
}

const post = {
  headers: [['content-type', 'application/json']] as Array<[string, string]>,
  body: '{"name":"Rex","categoryId":1}',
};

test('mounted at /api, every route lives under it and Location, Link and the deprecation Link say so', async (t) => {
  const server = await serve(t, { basePath: '/api' });
  const created = await server.request('POST', '/api/v1/pets', post);
  assert.equal(created.status, 201);
  assert.equal(created.headers.location, '/api/v1/pets/1');
  await server.request('POST', '/api/v1/pets', post);
  const page = await server.request('GET', '/api/v1/pets?limit=1');
  assert.equal(page.headers.link, '</api/v1/pets?limit=1&after=1>; rel="next"');
  const one = await server.request('GET', '/api/v1/pets/1');
  assert.equal(one.status, 200);
  assert.equal(one.headers.link, '</api/v1/pets>; rel="successor-version"');
  assert.equal((await server.request('GET', '/api/healthz', { auth: false })).status, 200);
  assert.equal((await server.request('GET', '/api/readyz', { auth: false })).status, 200);
  // Without the prefix nothing is served.
  const bare = await server.request('GET', '/v1/pets');
  assert.equal(bare.status, 404);
  assert.equal((bare.json as Json).message, 'no such path; see /api/v1/openapi.json for the paths this service serves');
});

test('mounted at /api, the OpenAPI document names /api/v1 as its server and the successor link with the prefix', async (t) => {
  const server = await serve(t, { basePath: '/api' });
  const doc = (await server.request('GET', '/api/v1/openapi.json', { auth: false })).json as Json;
  assert.deepEqual(doc.servers, [{ url: '/api/v1' }]);
  assert.match(String((doc.info as Json).description), /Every operation under \/api\/v1 but this document/);
  const paths = doc.paths as Record<string, Json>;
  assert.deepEqual(paths['/healthz']?.servers, [{ url: '/api' }]);
  const headers = (doc.components as Json).headers as Record<string, Json>;
  assert.deepEqual(headers.SuccessorLink?.schema, { type: 'string', const: '</api/v1/pets>; rel="successor-version"' });
});

test('public URLs become the OpenAPI servers, production and staging, and health paths sit at their roots', async (t) => {
  const urls = ['https://api.example.com/v1', 'https://staging.example.com/petstore/v1'];
  const server = await serve(t, { publicUrls: urls });
  const doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
  assert.deepEqual(
    doc.servers,
    urls.map((url) => ({ url })),
  );
  const paths = doc.paths as Record<string, Json>;
  assert.deepEqual(paths['/readyz']?.servers, [
    { url: 'https://api.example.com' },
    { url: 'https://staging.example.com/petstore' },
  ]);
});

test('without a mount the document and the answers are as before: servers /v1, health at the root', async (t) => {
  const server = await serve(t, {});
  const doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
  assert.deepEqual(doc.servers, [{ url: '/v1' }]);
  // The empty relative URL: the document's origin, with nothing before /healthz (not "/", which gives //healthz).
  assert.deepEqual((doc.paths as Record<string, Json>)['/healthz']?.servers, [{ url: '' }]);
  const unknown = await server.request('GET', '/v1/pets/');
  assert.equal(unknown.status, 404);
  assert.equal((unknown.json as Json).message, 'no such path; see /v1/openapi.json for the paths this service serves');
});

test('a bad basePath or public URL is refused at creation with a TypeError', async (t) => {
  const dataDir = await tempDirFor(t);
  for (const basePath of ['api', '/api/', '/a?b', '/a%20b', '/', '/a/../b', '/a/./b', '/..']) {
    await assert.rejects(
      createPetstore({ dataDir, keys: [TEST_KEY], logger: silentLoggerForTests, basePath }),
      TypeError,
      basePath,
    );
  }
  for (const url of [
    '/v1',
    'ftp://x/v1',
    'https://x/api',
    'https://x/v1/',
    'https://x/v1?a=1',
    'https://x/v1?',
    'https://x/v1#',
    'https://user:secret@x/v1',
    'https://user@x/v1',
  ]) {
    await assert.rejects(
      createPetstore({ dataDir, keys: [TEST_KEY], logger: silentLoggerForTests, publicUrls: [url] }),
      TypeError,
      url,
    );
  }
});

test('a public URL is published only as typed: anything a URL parser would write back otherwise is refused', async (t) => {
  const dataDir = await tempDirFor(t);
  const changed = [
    'https://api.example.com/a\nb/v1',
    'https://api.example.com/a\tb/v1',
    'https://api.example.com\\pets/v1',
    'https://api.example.com/a b/v1',
    'https://api.example.com/<script>alert(1)</script>/v1',
    'https://api.example.com/a"b/v1',
    'HTTPS://api.example.com/v1',
    'https://API.example.com/v1',
    'https://api.example.com:443/v1',
    'http://api.example.com:80/v1',
    'https://api.example.com/./v1',
    'https://api.example.com/x/../v1',
    'https://bücher.example/v1',
    'https://api.example.com/%zz/../v1',
    'https:api.example.com/v1',
  ];
  for (const url of changed) {
    await assert.rejects(
      createPetstore({ dataDir, keys: [TEST_KEY], logger: silentLoggerForTests, publicUrls: [url] }),
      (error: Error) => {
        assert.ok(error instanceof TypeError, url);
        assert.match(error.message, /written as a URL parser writes it back/, url);
        assert.ok(
          error.message.includes(JSON.stringify(new URL(url).href)),
          `${url}: the message shows how it reads: ${error.message}`,
        );
        return true;
      },
    );
  }
  // As typed, they are published exactly so.
  const exact = [
    'https://api.example.com/v1',
    'http://10.0.0.7:8080/pets%20api/v1',
    'https://xn--bcher-kva.example/v1',
    'https://[::1]:8443/v1',
  ];
  const server = await serve(t, { publicUrls: exact });
  const doc = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as Json;
  assert.deepEqual(
    doc.servers,
    exact.map((url) => ({ url })),
  );
  const cli = await runCli(['--data-dir', dataDir, '--public-url', 'https://api.example.com/<script>/v1'], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(cli.code, 2);
  assert.match(cli.stderr, /^cannot start: --public-url: a public URL must be written as a URL parser writes it back/);
});

test("the health paths' servers joined to their paths, as OpenAPI joins them (appended), give where they are served", async (t) => {
  const publicUrls = ['https://api.example.com/v1', 'https://staging.example.com/petstore/v1'];
  const cases: Array<[Parameters<typeof startServer>[0], string, (origin: string) => string[]]> = [
    [{}, '', (origin) => [`${origin}/healthz`]],
    [{ basePath: '/api' }, '/api', (origin) => [`${origin}/api/healthz`]],
    [{ publicUrls }, '', () => ['https://api.example.com/healthz', 'https://staging.example.com/petstore/healthz']],
  ];
  for (const [options, root, expected] of cases) {
    const server = await serve(t, options);
    const documentUrl = `${server.url}${root}/v1/openapi.json`;
    const doc = (await (await fetch(documentUrl)).json()) as Json;
    const servers = (doc.paths as Record<string, Json>)['/healthz']?.servers as Array<{ url: string }>;
    // OpenAPI appends the path to the server URL as it is; a relative result is read against the document's URL.
    const joined = servers.map(({ url }) => new URL(`${url}/healthz`, documentUrl).href);
    assert.deepEqual(joined, expected(server.url), JSON.stringify(servers));
    if (publicUrls !== options?.publicUrls) assert.equal((await fetch(joined[0] as string)).status, 200);
    assert.deepEqual((doc.paths as Record<string, Json>)['/readyz']?.servers, servers);
  }
});

test('a store that lacks the interface is refused at creation with a TypeError naming what is missing', async () => {
  await assert.rejects(createPetstore({ store: {} as never, keys: [TEST_KEY], logger: silentLoggerForTests }), {
    name: 'TypeError',
    message: 'options.store does not implement the PetStore interface: missing list, get, create, close, ready',
  });
  const almost = {
    list: () => ({ pets: [], more: false }),
    get: () => undefined,
    create: () => Promise.reject(new Error('no')),
    ready: true,
  };
  await assert.rejects(
    createPetstore({ store: almost as never, keys: [TEST_KEY], logger: silentLoggerForTests }),
    /missing close$/,
  );
});

test('--base-path and --public-url configure the server from the command line; bad values exit 2', async (t) => {
  const dir = await tempDirFor(t);
  const server = await spawnServerFor(
    t,
    ['--data-dir', dir, '--base-path', '/api', '--public-url', 'https://api.example.com/v1'],
    { PETSTORE_API_KEYS: TEST_KEY },
  );
  assert.match(server.url, /\/api$/, 'the listening line names the mounted URL');
  const res = await fetch(`${server.url}/v1/openapi.json`);
  assert.deepEqual(((await res.json()) as Json).servers, [{ url: 'https://api.example.com/v1' }]);
  const bad = await runCli(['--data-dir', dir, '--public-url', 'https://api.example.com/'], {
    PETSTORE_API_KEYS: TEST_KEY,
  });
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /--public-url: a public URL must be an absolute http\(s\) URL without credentials, ending in \/v1/,
  );
});
