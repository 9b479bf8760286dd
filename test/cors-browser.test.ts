/**
 * A real browser (headless Chromium) on a page of another origin calls the API with a read-only key
 * under a quota, as a public web page would: its script reads RateLimit-Policy, RateLimit,
 * Retry-After and the 403's WWW-Authenticate, which only CORS's expose list lets it see.
 * Skipped, saying so, where Chromium is not installed (Debian: apt-get install chromium).
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { openInChromium, withoutChromium } from './browser-support.js';
import { startServer } from './support.js';

const KEY = 'browser-page-key-0123456789';

interface Seen {
  status: number;
  policy: string | null;
  limit: string | null;
  retryAfter: string | null;
  challenge: string | null;
  code: string;
}

/** The page's script: three calls, what it could read of each, reported back to the page's own origin. */
const script = (api: string): string => `
  const call = async (method, body) => {
    const res = await fetch(${JSON.stringify(`${api}/v1/pets`)}, {
      method, body, headers: { authorization: 'Bearer ${KEY}', 'content-type': 'application/json' },
    });
    const h = (name) => res.headers.get(name);
    return { status: res.status, policy: h('RateLimit-Policy'), limit: h('RateLimit'), retryAfter: h('Retry-After'), challenge: h('WWW-Authenticate'), code: (await res.json()).code ?? '' };
  };
  (async () => {
    const seen = [await call('GET'), await call('POST', '{"name":"from a page","categoryId":1}'), await call('GET')];
    await fetch('/report', { method: 'POST', body: JSON.stringify(seen) });
  })().catch((error) => fetch('/report', { method: 'POST', body: JSON.stringify({ error: String(error) }) }));
`;

test("a page of another origin reads RateLimit-Policy, RateLimit, Retry-After and the 403's WWW-Authenticate in a real browser", {
  skip: withoutChromium,
  timeout: 120_000,
}, async (t) => {
  let report: (text: string) => void = () => {};
  const reported = new Promise<string>((resolve) => (report = resolve));
  const page: Server = createServer((req, res) => {
    if (req.method === 'POST' && req.url === '/report') {
      let text = '';
      req
        .setEncoding('utf8')
        .on('data', (chunk: string) => (text += chunk))
        .on('end', () => {
          res.end();
          report(text);
        });
      return;
    }
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(`<!doctype html><title>page</title><script>${script(apiUrl)}</script>`);
  });
  await new Promise<void>((resolve) => page.listen(0, '127.0.0.1', resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        page.closeAllConnections();
        page.close(() => resolve());
      }),
  );
  const origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  const api = await startServer({
    keys: [`${KEY}:pets:read`],
    corsOrigin: origin,
    rateLimit: { requests: 2, seconds: 600 },
  });
  t.after(() => api.close());
  const apiUrl = api.url;

  await openInChromium(t, `${origin}/`);
  const timeout = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error('the page did not report within 45 s')), 45_000).unref(),
  );
  const seen = JSON.parse(await Promise.race([reported, timeout])) as Seen[] | { error: string };
  assert.ok(Array.isArray(seen), `the page's script failed: ${JSON.stringify(seen)}`);
  // t counts down from 600 as the seconds go by: 599 if the calls straddled a second's end.
  const t429 = /;t=(599|600)$/.exec(seen[2]?.limit ?? '')?.[1];
  const shown = seen.map((s) => ({ ...s, limit: s.limit?.replace(/;t=(599|600)$/, ';t=600') }));
  assert.deepEqual(shown, [
    {
      status: 200,
      policy: '"per-key";q=2;w=600',
      limit: '"per-key";r=1;t=600',
      retryAfter: null,
      challenge: null,
      code: '',
    },
    {
      status: 403,
      policy: '"per-key";q=2;w=600',
      limit: '"per-key";r=0;t=600',
      retryAfter: null,
      challenge: 'Bearer realm="petstore", error="insufficient_scope", scope="pets:write"',
      code: 'insufficient_scope',
    },
    {
      status: 429,
      policy: '"per-key";q=2;w=600',
      limit: '"per-key";r=0;t=600',
      retryAfter: t429,
      challenge: null,
      code: 'rate_limited',
    },
  ]);
});
