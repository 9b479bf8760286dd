/**
 * Answers are written together at the end of the event loop's turn (http/connections/write-batch.ts). For an
 * embedder nothing else may change: each request's answer is logged in its own async context, a
 * logger that throws once does not end the process (and embed.test.ts: the log is flushed at close
 * after the answers the close itself made).
 */
import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { spawnSync } from 'node:child_process';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { createPetstore, silentLoggerForTests, type Logger } from './package.js';
import { tempDirFor, TEST_KEY } from './support.js';

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${TEST_KEY}\r\n\r\n`;

test('pipelined requests answered in one turn are each logged in their own async context', {
  timeout: 120_000,
}, async (t) => {
  const als = new AsyncLocalStorage<string>();
  const seen: string[] = [];
  const logger: Logger = {
    request: (e) => {
      seen.push(`${e.path} in ${als.getStore()}`);
    },
    info() {},
    error() {},
  };
  const petstore = await createPetstore({ dataDir: await tempDirFor(t), keys: [TEST_KEY], logger });
  const server = createServer((req, res) => als.run(req.url ?? '', () => petstore.handler(req, res)));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await petstore.close();
  });
  await new Promise<void>((done) => {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () =>
      socket.write(get('/v1/pets') + get('/healthz') + get('/v1/pets/1')),
    );
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk;
      if ((text.match(/HTTP\/1\.1 /g) ?? []).length === 3) {
        socket.destroy();
        done();
      }
    });
  });
  assert.deepEqual(seen, ['/v1/pets in /v1/pets', '/healthz in /healthz', '/v1/pets/1 in /v1/pets/1']);
});

test('a logger whose request() throws once is reported to its error(), and the process serves on', {
  timeout: 120_000,
}, async (t) => {
  const dir = await tempDirFor(t);
  const index = resolve(__dirname, '../index.js');
  const script = `
    const { createPetstore } = require(${JSON.stringify(index)});
    const http = require('node:http');
    let thrown = false;
    const logger = { request() { if (!thrown) { thrown = true; throw new Error('log transport hiccup'); } }, info() {}, error(message, error) { console.log('error:', message, error.message); } };
    (async () => {
      const ps = await createPetstore({ dataDir: ${JSON.stringify(dir)}, keys: [${JSON.stringify(TEST_KEY)}], logger });
      const server = http.createServer(ps.handler);
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const once = () => new Promise((ok, fail) => http.get({ agent: false, host: '127.0.0.1', port: server.address().port, path: '/healthz' }, (r) => { console.log('status', r.statusCode); r.resume(); r.on('end', ok); }).on('error', fail));
      await once();
      await once();
      server.close();
      await ps.close();
    })();`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 20_000 });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(run.stdout, 'error: could not record the request log transport hiccup\nstatus 200\nstatus 200\n');
});

test('an event stream ended in the turn it was answered in still ends: its head goes out as it is made, not held for the turn', {
  timeout: 120_000,
}, async (t) => {
  const petstore = await createPetstore({
    dataDir: await tempDirFor(t),
    keys: [TEST_KEY],
    logger: silentLoggerForTests,
  });
  const server = createServer(petstore.handler);
  // Runs before the turn's held answers: a stream whose head were held would start after it was ended, and never end.
  server.on('request', () => setImmediate(() => petstore.closeStreams()));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await petstore.close();
  });
  const ended = new Promise<string>((done, fail) => {
    const headers = { authorization: `Bearer ${TEST_KEY}`, accept: 'text/event-stream' };
    request({ host: '127.0.0.1', port: (server.address() as AddressInfo).port, path: '/v1/pets', headers }, (res) => {
      res.resume();
      res.on('end', () => done(`${res.statusCode} ${res.headers['content-type']} ended`));
    })
      .on('error', fail)
      .end();
  });
  const outcome = await Promise.race([
    ended,
    new Promise<string>((later) => setTimeout(() => later('still open after 3 s'), 3000)),
  ]);
  assert.equal(outcome, '200 text/event-stream ended');
});
