import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { chmod, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import {
  request,
  runCli,
  runNode,
  spawnServerFor,
  stopProcess,
  TEST_KEY,
  tempDirFor,
  waitFor,
  within,
} from './support.js';
import { startReceiver } from './webhook-receiver.js';
import { addWebhook, webhooks } from './webhook-support.js';

test('webhooks add prints a whsec_ secret of 32 random bytes once and keeps it in a 0600 webhooks.json; list never shows it', async (t) => {
  const dataDir = await tempDirFor(t);
  const { id, secret } = await addWebhook(dataDir, 'https://hooks.example/in', '--label', 'crm', '--status', 'sold');
  assert.equal(Buffer.from(secret.slice('whsec_'.length), 'base64').length, 32);
  const other = await addWebhook(dataDir, 'https://hooks.example/in');
  assert.notEqual(other.secret, secret);
  assert.equal((await stat(join(dataDir, 'webhooks.json'))).mode & 0o777, 0o600);
  assert.match(await readFile(join(dataDir, 'webhooks.json'), 'utf8'), new RegExp(secret.replace(/[+/]/g, '\\$&')));
  const list = await webhooks(dataDir, 'list');
  assert.match(list, new RegExp(`^${id}  \\S+  https://hooks\\.example/in  sold  1 secret\\(s\\)  crm$`, 'm'));
  assert.doesNotMatch(list, /whsec_/);
  const rotated = await webhooks(dataDir, 'rotate-secret', id);
  assert.doesNotMatch(await webhooks(dataDir, 'list'), /whsec_/);
  assert.match(await webhooks(dataDir, 'list'), new RegExp(`^${id} .* 2 secret\\(s\\)  crm$`, 'm'));
  assert.match(rotated, /^rotated the secret of webhook wh_/);
  assert.equal(await webhooks(dataDir, 'remove', id), `removed webhook ${id}\n`);
  assert.doesNotMatch(await webhooks(dataDir, 'list'), new RegExp(id));
  // A secret readable by others is refused, by the commands as by a server.
  await chmod(join(dataDir, 'webhooks.json'), 0o640);
  const refused = await runCli(['webhooks', 'list', '--data-dir', dataDir]);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /holds signing secrets and others may read it; chmod 600 it/);
  assert.doesNotMatch(refused.stderr, /\n {4}at /, 'no stack');
});

test('webhooks commands refuse what they cannot do: http without the flag, credentials in the URL, an unknown id, a bad --from', async (t) => {
  const dataDir = await tempDirFor(t);
  const cases: Array<[string[], number, RegExp]> = [
    [['add', 'http://hooks.example/in'], 2, /webhooks add failed: .*https only, unless --webhooks-allow-http/],
    [['add', 'https://user:pw@hooks.example/in'], 2, /must not hold a user name or password/],
    [['add', 'ftp://hooks.example/in'], 2, /must be https, not ftp/],
    [['add', 'nonsense'], 2, /not an absolute URL/],
    [
      ['add', 'https://hooks.example/in', '--status', 'lost'],
      2,
      /--status must be one of available, pending, sold, got "lost"/,
    ],
    [['remove', 'wh_00000000'], 1, /no webhook with id wh_00000000/],
    [['rotate-secret', 'wh_00000000'], 1, /no webhook with id wh_00000000/],
    [['replay', 'wh_00000000'], 2, /usage: webhooks replay <id> --from <pet id>/],
    [['replay', 'wh_00000000', '--from', '0'], 2, /usage: webhooks replay/],
    [['list', '--status', 'sold'], 2, /--label and --status apply only to "webhooks add"/],
    [['frobnicate'], 2, /usage: webhooks add/],
  ];
  for (const [args, code, message] of cases) {
    const run = await runCli(['webhooks', ...args, '--data-dir', dataDir]);
    assert.equal(run.code, code, `${args.join(' ')}: ${run.stderr}`);
    assert.match(run.stderr, message, args.join(' '));
  }
  const allowed = await runCli(['webhooks', 'add', 'http://hooks.example/in', '--data-dir', dataDir], {
    PETSTORE_WEBHOOKS_ALLOW_HTTP: 'true',
  });
  assert.equal(allowed.code, 0, allowed.stderr);
});

test('an embedder without subscriptions loads no webhook module; a data directory with webhooks.json loads them', async (t) => {
  const dataDir = await tempDirFor(t);
  const path = join(__dirname, `tmp-webhooks-${randomBytes(6).toString('hex')}.cjs`);
  // Run inside the package folder, so that `petstore-api` resolves to this package.
  await writeFile(
    path,
    `
    const { createPetstore } = require('petstore-api');
    (async () => {
      for (const dir of ['without', 'with']) {
        const petstore = await createPetstore({ dataDir: ${JSON.stringify(dataDir)} + '/' + dir, keys: ['${TEST_KEY}'], logger: { request() {}, info() {}, error() {} } });
        console.log(JSON.stringify(Object.keys(require.cache).filter((f) => /dist.webhooks./.test(f)).length));
        await petstore.close();
      }
    })();
  `,
  );
  t.after(() => rm(path, { force: true }));
  await addWebhook(join(dataDir, 'with'), 'https://hooks.example/in');
  const run = await runNode(path, 10_000);
  assert.equal(run.code, 0, run.stderr);
  const [without, withFile] = run.stdout.trim().split('\n').map(Number);
  assert.equal(without, 0);
  assert.ok((withFile ?? 0) >= 5, `${withFile} modules`);
});

test('killed with SIGKILL during delivery, a restarted server delivers every pet: none skipped, duplicates with the same webhook-id', async (t) => {
  // The tenth request is left unanswered until the first server is gone: the kill lands with it in flight.
  let holding = true;
  const receiver = await startReceiver(t, (_req, res) => {
    if (receiver.received.length === 10 && holding) return void res.on('close', () => {});
    receiver.accepted.push(receiver.received.at(-1) as never);
    res.writeHead(200).end();
  });
  const dataDir = await tempDirFor(t);
  receiver.secrets = [(await addWebhook(dataDir, receiver.url)).secret];
  const args = ['--data-dir', dataDir, '--webhooks-allow-http', '--webhooks-allow-private'];
  const first = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  const create = async (url: string): Promise<number> => {
    const res = await request(url, 'POST', '/v1/pets', {
      body: '{"name":"Rex","categoryId":1}',
      headers: [['content-type', 'application/json']],
    });
    assert.equal(res.status, 201);
    return (res.json as { id: number }).id;
  };
  const ids: number[] = [];
  for (let i = 0; i < 20; i++) ids.push(await create(first.url));
  await waitFor(() => receiver.received.length === 10, 10_000, 'the tenth request');
  // Its cursor is on disk as far as it goes (the ninth pet) before the kill.
  const cursorOnDisk = async (): Promise<number> => {
    const text = await readFile(join(dataDir, 'webhook-cursors.json'), 'utf8').catch(() => '{}');
    return Math.max(0, ...[...text.matchAll(/"last":([0-9]+)/g)].map((m) => Number(m[1])));
  };
  let onDisk = 0;
  await waitFor(
    () => {
      void cursorOnDisk().then((n) => (onDisk = n));
      return onDisk >= 9;
    },
    5000,
    'the cursor written',
  );
  first.child.kill('SIGKILL');
  await first.exited;
  holding = false;
  const second = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  ids.push(await create(second.url));
  await waitFor(
    () => receiver.accepted.some((d) => d.petId === ids.at(-1)),
    15_000,
    'every pet delivered after the restart',
  );
  const delivered = receiver.accepted.map((d) => d.petId);
  assert.deepEqual(
    [...new Set(delivered)].sort((a, b) => a - b),
    ids,
  );
  assert.deepEqual(
    delivered,
    [...delivered].sort((a, b) => a - b),
    'in order; a duplicate only next to its first',
  );
  for (const d of receiver.received) assert.equal(d.id, receiver.received.find((e) => e.petId === d.petId)?.id);
  assert.equal(receiver.unverified, 0);
  // Stopped here, before the hooks remove its directory.
  assert.equal(await stopProcess(second), 0);
});

test('killed with SIGKILL the moment a subscription added to a running server is taken up, a restart delivers from there: none skipped', async (t) => {
  const receiver = await startReceiver(t, 'hang');
  const dataDir = await tempDirFor(t);
  const args = ['--data-dir', dataDir, '--webhooks-allow-http', '--webhooks-allow-private'];
  const create = async (url: string): Promise<number> => {
    const res = await request(url, 'POST', '/v1/pets', {
      body: '{"name":"Rex","categoryId":1}',
      headers: [['content-type', 'application/json']],
    });
    assert.equal(res.status, 201);
    return (res.json as { id: number }).id;
  };
  const first = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  const before = [await create(first.url), await create(first.url)];
  // Killed from the line's own 'data' event: as soon as this process can see that the server took it up.
  const takenUp = new Promise<string>((resolve) => {
    const onData = (): void => {
      const line = /\{[^\n]*"msg":"webhook subscription delivering"[^\n]*\}/.exec(first.stdout());
      if (line === null) return;
      first.child.kill('SIGKILL');
      first.child.stdout?.off('data', onData);
      resolve(line[0]);
    };
    first.child.stdout?.on('data', onData);
  });
  const { id, secret } = await addWebhook(dataDir, receiver.url);
  receiver.secrets = [secret];
  const line = JSON.parse(await within(takenUp, 10_000, 'the take-up')) as { subscription: string; after: number };
  await first.exited;
  assert.deepEqual([line.subscription, line.after], [id, before.at(-1)], 'after the pets there when taken up');
  const cursors = JSON.parse(await readFile(join(dataDir, 'webhook-cursors.json'), 'utf8')) as {
    cursors: Record<string, { last: number }>;
  };
  assert.equal(cursors.cursors[id]?.last, line.after, 'where it starts was on disk before the line');

  receiver.behaviour = 200;
  const second = await spawnServerFor(t, args, { PETSTORE_API_KEYS: TEST_KEY });
  const after = [await create(second.url), await create(second.url)];
  await waitFor(() => receiver.accepted.length >= after.length, 10_000, 'the pets created since delivered');
  assert.deepEqual(
    receiver.received.map((d) => d.petId),
    after,
    'from the start taken up, every pet, none of those before',
  );
  assert.match(second.stdout(), new RegExp(`"msg":"webhook subscription delivering","subscription":"${id}","after":2`));
  assert.equal(receiver.unverified, 0);
  assert.equal(await stopProcess(second), 0);
});
