/**
 * A real browser (headless Chromium) on a page of another origin follows the pets as docs/api.md
 * says to: the `fetch()` stream reader of "Keeping up", run as the page's script with the test's
 * key and address, gets every pet after its Last-Event-ID, and then a new one; and the page reads a
 * page's ETag and gets its 304. EventSource cannot send Authorization, so this is the way a browser
 * has. Skipped, saying so, where Chromium is not installed (Debian: apt-get install chromium).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { openInChromium, withoutChromium } from './browser-support.js';
import { startServer, TEST_KEY, within } from './support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

/** The stream reader of docs/api.md, as written there, with this test's key, address and report. */
function documentedReader(api: string): string {
  const guide = readFileSync(resolve(__dirname, '../../docs/api.md'), 'utf8');
  const code = /```js\n(const KEY = 'pet_…';[\s\S]*?)```/.exec(guide)?.[1];
  assert.ok(code !== undefined, 'docs/api.md holds the fetch() stream reader');
  let script = code;
  const substitutions: Array<[string, string]> = [
    ["const KEY = 'pet_…';", `const KEY = ${JSON.stringify(TEST_KEY)};`],
    ["const BASE = 'http://127.0.0.1:8080/v1';", `const BASE = ${JSON.stringify(`${api}/v1`)};`],
    ["let lastId = '0';", "let lastId = '1';"],
    ['follow((json) => console.log(json));', "follow((json) => report('pet', json));"],
  ];
  for (const [from, to] of substitutions) {
    assert.ok(script.includes(from), `the guide's reader has ${from}`);
    script = script.replace(from, to);
  }
  return script;
}

/** The page's own check of a conditional GET: the ETag it can read, and the status with If-None-Match. */
const conditionalCheck = (api: string): string => `
  (async () => {
    const headers = { Authorization: ${JSON.stringify(`Bearer ${TEST_KEY}`)} };
    const first = await fetch(${JSON.stringify(`${api}/v1/pets`)}, { headers });
    const etag = first.headers.get('ETag');
    const again = await fetch(${JSON.stringify(`${api}/v1/pets`)}, { headers: { ...headers, 'If-None-Match': etag }, cache: 'no-store' });
    report('conditional', JSON.stringify({ etag, status: again.status }));
  })().catch((error) => report('error', String(error)));
`;

test('in a real browser, the fetch() reader of docs/api.md follows the stream across origins, and a page reads its ETag and gets a 304', {
  skip: withoutChromium,
  timeout: 120_000,
}, async (t) => {
  // [kind, text, the page's number for it]: the page's POSTs may arrive out of the order it sent them.
  const reports: Array<[string, string, number]> = [];
  let changed: () => void = () => {};
  const page: Server = createServer((req, res) => {
    if (req.method === 'POST' && req.url?.startsWith('/report?')) {
      let text = '';
      req
        .setEncoding('utf8')
        .on('data', (chunk: string) => (text += chunk))
        .on('end', () => {
          res.end();
          const [kind = '', sent = ''] = (req.url?.slice('/report?'.length) ?? '').split('&');
          reports.push([kind, text, Number(sent)]);
          changed();
        });
      return;
    }
    const report =
      'let reported = 0;\n' +
      "const report = (kind, text) => fetch(`/report?${kind}&${reported++}`, { method: 'POST', body: text });";
    res
      .writeHead(200, { 'content-type': 'text/html' })
      .end(
        `<!doctype html><title>page</title><script>${report}\n${documentedReader(api.url)}\n${conditionalCheck(api.url)}</script>`,
      );
  });
  await new Promise<void>((r) => page.listen(0, '127.0.0.1', r));
  t.after(
    () =>
      new Promise<void>((r) => {
        page.closeAllConnections();
        page.close(() => r());
      }),
  );
  const origin = `http://127.0.0.1:${(page.address() as AddressInfo).port}`;
  const api = await startServer({ corsOrigin: origin });
  t.after(() => api.close());
  const texts: string[] = [];
  for (const name of ['One', 'Two', 'Three'])
    texts.push(
      (await api.request('POST', '/v1/pets', { headers: JSON_HEADERS, body: `{"name":"${name}","categoryId":1}` }))
        .text,
    );

  await openInChromium(t, `${origin}/`);
  const until = (count: number, what: string): Promise<void> =>
    within(
      new Promise<void>((r) => {
        changed = () => {
          if (reports.filter(([kind]) => kind === 'pet').length >= count && reports.some(([kind]) => kind !== 'pet'))
            r();
        };
        changed();
      }),
      45_000,
      what,
    );
  await until(2, 'the page reports pets 2 and 3, and its conditional GET');
  texts.push(
    (await api.request('POST', '/v1/pets', { headers: JSON_HEADERS, body: '{"name":"Four","categoryId":1}' })).text,
  );
  await until(3, 'then the new pet 4');
  assert.deepEqual(
    reports.filter(([kind]) => kind === 'error'),
    [],
  );
  assert.deepEqual(
    reports
      .filter(([kind]) => kind === 'pet')
      .sort(([, , a], [, , b]) => a - b)
      .map(([, text]) => text),
    texts.slice(1),
    'every pet after Last-Event-ID 1, each its JSON text',
  );
  const conditional = JSON.parse(reports.find(([kind]) => kind === 'conditional')?.[1] ?? '{}') as {
    etag: string;
    status: number;
  };
  assert.deepEqual(
    conditional,
    { etag: 'W/"20.0.all.3"', status: 304 },
    'the page reads the ETag (exposed) and its If-None-Match passes the preflight',
  );
});
