/**
 * Services embedded in one process share nothing: each holds its own answers for the turn's end
 * (http/connections/write-batch.ts) and remembers its own connections' keys (http/access/remembered-key.ts;
 * remembered-key.test.ts chains two on one connection).
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, get } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { startServer, tempDirFor, TEST_KEY } from './support.js';
import { createPetstore, silentLoggerForTests } from './package.js';

test("an answer one service holds for its turn is not written early by another service's server", async (t) => {
  const a = await createPetstore({ dataDir: await tempDirFor(t), keys: [TEST_KEY], logger: silentLoggerForTests });
  const b = await startServer();
  t.after(() => b.close());
  // A connection to b, and its server side: where b's parser is told of a request it cannot parse.
  const accepted = once(b.running.server, 'connection') as Promise<[Socket]>;
  const client = connect(Number(new URL(b.url).port), '127.0.0.1');
  t.after(() => client.destroy());
  const [bSide] = await accepted;
  let bAnswer = '';
  client.on('data', (chunk) => (bAnswer += chunk));

  const sentAfter: Array<[string, boolean]> = [];
  const server = createServer((req, res) => {
    a.handler(req, res);
    sentAfter.push(['its own handler', res.headersSent]);
    // What Node's parser does on a malformed request; b answers it after every answer b owes.
    const parseError = Object.assign(new Error('Parse Error: Invalid method encountered'), {
      code: 'HPE_INVALID_METHOD',
    });
    b.running.server.emit('clientError', parseError, bSide);
    sentAfter.push(["b's error answer", res.headersSent]);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await a.close();
  });
  const port = (server.address() as AddressInfo).port;
  // No key: refused at once, in the turn the request is read, and held for that turn's end.
  const status = await new Promise<number | undefined>((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/v1/pets', agent: false }, (res) => {
      res.resume().on('end', () => resolve(res.statusCode));
    }).on('error', reject);
  });
  assert.equal(status, 401);
  assert.deepEqual(sentAfter, [
    ['its own handler', false],
    ["b's error answer", false],
  ]);
  await once(client, 'end');
  assert.match(bAnswer, /^HTTP\/1\.1 400 /, 'b answered its own connection');
});

test('closing one service leaves another in the same process serving', async (t) => {
  const a = await createPetstore({ dataDir: await tempDirFor(t), keys: [TEST_KEY], logger: silentLoggerForTests });
  const b = await startServer();
  t.after(() => b.close());
  await a.close();
  const answer = await b.request('GET', '/v1/pets');
  assert.equal(answer.status, 200);
});
