/**
 * The reference page at GET /v1/docs: over plain HTTP (size, CSP, no key needed, --docs off, the
 * pointers at / and /v1), and in headless Chromium, driven over the DevTools protocol: it loads with
 * no error and no request to another host, and its form sends requests with the key typed in.
 */
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { test } from 'node:test';
import { withoutChromium } from './browser-support.js';
import { openPage } from './devtools-support.js';
import { startServer, TEST_KEY } from './support.js';

test('GET /v1/docs needs no key and is an HTML page under a strict CSP, at most 40 KB gzip-coded', async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const page = await server.request('GET', '/v1/docs', { auth: false });
  assert.equal(page.status, 200);
  assert.equal(page.headers['content-type'], 'text/html; charset=utf-8');
  const csp = String(page.headers['content-security-policy']);
  assert.match(csp, /^default-src 'none'; /);
  assert.match(csp, /script-src 'sha256-[A-Za-z0-9+/]+=*';/);
  assert.match(csp, /style-src 'sha256-[A-Za-z0-9+/]+=*';/);
  assert.match(csp, /connect-src 'self'/);
  assert.doesNotMatch(csp, /unsafe|https?:/);
  assert.doesNotMatch(page.text, /(src|href)="(https?:)?\/\//, 'nothing from another host');
  for (const words of [
    'listPets',
    'createPet',
    'getPet',
    'Deprecated.',
    'Thu, 05 Dec 2030',
    'RateLimit',
    'Deprecation',
    'Sunset',
    'ETag',
    'Link',
    'insufficient_scope',
  ]) {
    assert.ok(page.text.includes(words), words);
  }
  const { encoding, bytes } = await gzipCoded(`${server.url}/v1/docs`);
  assert.equal(encoding, 'gzip');
  assert.ok(bytes.length <= 40_000, `${bytes.length} bytes gzip-coded`);
  assert.equal(gunzipSync(bytes).toString(), page.text);
});

/** The answer's bytes as they came, gzip-coded when the server codes them (fetch would undo the coding). */
function gzipCoded(url: string): Promise<{ encoding: string | undefined; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    httpRequest(url, { headers: { 'accept-encoding': 'gzip' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ encoding: res.headers['content-encoding'], bytes: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

test('GET / and GET /v1 point to the page and the document, without a key; under --base-path too', async (t) => {
  const server = await startServer({ basePath: '/api' });
  t.after(() => server.close());
  for (const path of ['/api/', '/api/v1']) {
    const index = await server.request('GET', path, { auth: false });
    assert.equal(index.status, 200, path);
    assert.deepEqual(index.json, { docs: '/api/v1/docs', openapi: '/api/v1/openapi.json' });
    assert.equal(index.headers.link, '</api/v1/docs>; rel="help", </api/v1/openapi.json>; rel="service-desc"');
  }
  const page = await server.request('GET', '/api/v1/docs', { auth: false });
  assert.equal(page.status, 200);
  assert.ok(page.text.includes('<code id="base">/api/v1</code>'), 'the form sends to the mounted API');
  assert.equal((await server.request('GET', '/v1/docs')).status, 404, 'not outside the mount');
});

test('with --docs off, /v1/docs is any unknown path (401 without a key, 404 with one) and the pointers name only the document', async (t) => {
  const server = await startServer({ docs: false });
  t.after(() => server.close());
  const unknown = await server.request('GET', '/v1/nothing', { auth: false });
  const docs = await server.request('GET', '/v1/docs', { auth: false });
  assert.equal(docs.status, 401);
  assert.deepEqual(docs.json, unknown.json);
  assert.equal((await server.request('GET', '/v1/docs')).status, 404);
  assert.deepEqual((await server.request('GET', '/v1', { auth: false })).json, { openapi: '/v1/openapi.json' });
  const document = (await server.request('GET', '/v1/openapi.json', { auth: false })).json as {
    paths: Record<string, unknown>;
  };
  assert.equal(document.paths['/docs'], undefined, 'the document does not describe a page that is off');
});

test('in Chromium the page loads with no error and no outside request, lists the operations, and tries listPets with and without a key', {
  skip: withoutChromium,
  timeout: 120_000,
}, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  await server.request('POST', '/v1/pets', {
    body: '{"name":"Rex","categoryId":7}',
    headers: [['content-type', 'application/json']],
  });
  const page = await openPage(t, `${server.url}/v1/docs`);
  assert.equal(page.errors.length, 0, `no error on load: ${JSON.stringify(page.errors)}`);
  const origin = new URL(server.url).origin;
  assert.deepEqual(
    page.requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')),
    [],
  );
  const listed = (await page.evaluate(`[...document.querySelectorAll('nav a')].map((a) => a.textContent)`)) as string[];
  for (const id of ['listPets', 'createPet', 'getPet']) assert.ok(listed.includes(id), id);
  const tryIt = (key: string): string => `(async () => {
      document.getElementById('key').value = ${JSON.stringify(key)};
      const op = document.getElementById('op'); op.value = 'listPets'; op.dispatchEvent(new Event('change'));
      document.getElementById('try').requestSubmit();
      const status = document.getElementById('result-status');
      for (let i = 0; i < 200 && /^(sending|nothing)/.test(status.textContent); i++) await new Promise((r) => setTimeout(r, 25));
      return { status: status.textContent, headers: document.getElementById('result-headers').textContent, body: document.getElementById('result-body').textContent };
    })()`;
  const withKey = (await page.evaluate(tryIt(TEST_KEY))) as { status: string; headers: string; body: string };
  assert.match(withKey.status, /^200 /);
  assert.match(withKey.headers, /content-type: application\/json/);
  assert.deepEqual(JSON.parse(withKey.body), [{ id: 1, name: 'Rex', categoryId: 7 }]);
  const withoutKey = (await page.evaluate(tryIt(''))) as { status: string; headers: string; body: string };
  assert.match(withoutKey.status, /^401 /);
  assert.match(withoutKey.headers, /www-authenticate: Bearer realm="petstore"/);
  assert.equal((JSON.parse(withoutKey.body) as { code: string }).code, 'unauthorized');
  // Chromium reports the 401 itself as a failed load; anything else is a fault of the page.
  assert.deepEqual(
    page.errors.filter((e) => !(e.source === 'network' && /401/.test(e.text))),
    [],
  );
  assert.equal(
    await page.evaluate('localStorage.length + sessionStorage.length + document.cookie.length'),
    0,
    'the key is kept nowhere',
  );
  assert.deepEqual(
    page.requests.filter((url) => !url.startsWith(`${origin}/`) && !url.startsWith('data:')),
    [],
  );
});

test('on a phone 375 px wide the page needs no sideways scrolling: nothing, not a table, is cut off', {
  skip: withoutChromium,
  timeout: 120_000,
}, async (t) => {
  const server = await startServer();
  t.after(() => server.close());
  const page = await openPage(t, `${server.url}/v1/docs`, 375);
  assert.equal(await page.evaluate('innerWidth'), 375);
  const wide = (await page.evaluate(`[document.documentElement, ...document.querySelectorAll('table, pre, code')]
    .filter((e) => e.scrollWidth > e.clientWidth + 1 || e.getBoundingClientRect().right > innerWidth + 1)
    .map((e) => e.tagName + ': ' + e.textContent.slice(0, 40))`)) as string[];
  assert.deepEqual(wide, []);
});
