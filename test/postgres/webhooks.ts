/**
 * Webhooks over PostgreSQL: subscriptions in the database, managed with `webhooks … --database-url`,
 * taken up by running instances; each delivered by one instance at a time (a lease), every pet once
 * and in order while both run; after a kill -9 of the one delivering, the other takes over within
 * the lease and no pet is skipped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, runCli, spawnServerFor, stopProcess, TEST_KEY, waitFor, type ServerProcess } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { startReceiver } from '../webhook-receiver.js';
import { connect } from './store.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
const ENV = { PETSTORE_API_KEYS: TEST_KEY };
const SERVE = ['--webhooks-allow-http', '--webhooks-allow-private'];
// docs/postgresql.md: a lease of 10 s, renewed and looked for every second.
const TAKEOVER_BOUND_MS = 12_000;

async function createPets(url: string, count: number, from: number): Promise<number[]> {
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const body = JSON.stringify({ name: `pet ${from + i}`, categoryId: 1, status: 'available' });
    const res = await request(url, 'POST', '/v1/pets', { headers: JSON_HEADERS, body });
    assert.equal(res.status, 201, res.text);
    ids.push((res.json as { id: number }).id);
  }
  return ids;
}

const delivering = (s: ServerProcess): boolean => s.stdout().includes('"msg":"webhook subscription delivering"');

export function webhookTests(cluster: () => Cluster): void {
  const commands =
    'webhooks add, list and remove act on the database; running instances take them up without a restart';
  test(commands, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const receiver = await startReceiver(t);
    const instance = await spawnServerFor(t, ['--database-url', url, ...SERVE], ENV);
    const added = await runCli([
      'webhooks',
      'add',
      receiver.url,
      '--label',
      'crm',
      '--database-url',
      url,
      '--webhooks-allow-http',
    ]);
    assert.equal(added.code, 0, added.stderr);
    const [, id, secret] =
      /^added webhook (wh_[0-9a-f]{8}) for .*\n(whsec_[A-Za-z0-9+/]{43}=)\n$/.exec(added.stdout) ?? [];
    assert.ok(id !== undefined && secret !== undefined, added.stdout);
    receiver.secrets = [secret];
    const listed = await runCli(['webhooks', 'list'], { PETSTORE_DATABASE_URL: url });
    assert.equal(listed.code, 0, listed.stderr);
    assert.match(listed.stdout, new RegExp(`^${id}  \\S+  ${receiver.url}  all  1 secret\\(s\\)  crm$`, 'm'));
    assert.equal((await sql`SELECT id FROM petstore.webhook_subscriptions`).length, 1);

    await waitFor(() => delivering(instance), 3000, 'the running instance takes the subscription up');
    const ids = await createPets(instance.url, 3, 0);
    await waitFor(() => receiver.accepted.length >= 3, 5000, 'three deliveries');
    assert.deepEqual(
      receiver.accepted.map((d) => d.petId),
      ids,
    );
    assert.equal(receiver.unverified, 0);

    // A new secret and a replay reach the instance delivering, as from webhooks.json.
    const rotated = await runCli(['webhooks', 'rotate-secret', id, '--database-url', url]);
    assert.equal(rotated.code, 0, rotated.stderr);
    receiver.secrets = [/\n(whsec_\S+)\n$/.exec(rotated.stdout)?.[1] as string, secret];
    const replayed = await runCli(['webhooks', 'replay', id, '--from', String(ids[1]), '--database-url', url]);
    assert.equal(replayed.code, 0, replayed.stderr);
    await waitFor(() => receiver.accepted.length >= 5, 5000, 'the replay of pets 2 and 3');
    const again = receiver.accepted.slice(3);
    assert.deepEqual(
      again.map((d) => d.petId),
      ids.slice(1),
    );
    assert.ok(
      again.every((d) => d.verifiedWith.includes(0) && d.verifiedWith.includes(1)),
      'signed with both secrets',
    );
    const accepted = receiver.accepted.length;

    const removed = await runCli(['webhooks', 'remove', id, '--database-url', url]);
    assert.equal(removed.code, 0, removed.stderr);
    assert.equal(
      (await sql`SELECT subscription_id FROM petstore.webhook_cursors`).length,
      0,
      'its cursor goes with it',
    );
    await waitFor(
      () => instance.stdout().includes('"msg":"webhook subscription stopped"'),
      3000,
      'the instance lets it go',
    );
    await createPets(instance.url, 1, 3);
    const missing = await runCli(['webhooks', 'remove', id, '--database-url', url]);
    assert.equal(missing.code, 1);
    assert.match(missing.stderr, new RegExp(`no webhook with id ${id}`));
    assert.equal(receiver.received.length, accepted, 'nothing is delivered to a removed subscription');
  });

  const twoInstances =
    'two instances: each pet delivered once and in order while both run; ' +
    'after a kill -9 of the one delivering the other takes over within the lease, no pet skipped';
  test(twoInstances, { timeout: 60_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const receiver = await startReceiver(t);
    const added = await runCli(['webhooks', 'add', receiver.url, '--database-url', url, '--webhooks-allow-http']);
    assert.equal(added.code, 0, added.stderr);
    receiver.secrets = [/\n(whsec_\S+)\n$/.exec(added.stdout)?.[1] as string];
    const instances = await Promise.all([0, 1].map(() => spawnServerFor(t, ['--database-url', url, ...SERVE], ENV)));
    await waitFor(() => instances.some(delivering), 3000, 'one instance takes the subscription');

    // Creates through both instances; the receiver sees every pet once, in id order.
    const first = [
      ...(await createPets(instances[0]?.url as string, 10, 0)),
      ...(await createPets(instances[1]?.url as string, 10, 10)),
    ];
    await waitFor(() => receiver.accepted.length >= first.length, 10_000, 'every pet delivered');
    await new Promise((r) => setTimeout(r, 1500)); // a second instance that also delivered would have by now
    assert.deepEqual(
      receiver.received.map((d) => d.petId),
      first,
      'once each, in order, while both run',
    );
    assert.equal(instances.filter(delivering).length, 1, 'one instance delivers');

    const victim = instances.find(delivering) as ServerProcess;
    const survivor = instances.find((s) => s !== victim) as ServerProcess;
    // Pets committed just before the kill: some are in flight or not yet delivered when it dies.
    const second = await createPets(survivor.url, 20, 20);
    victim.child.kill('SIGKILL');
    const killedAt = performance.now();
    await victim.exited;
    const third = await createPets(survivor.url, 5, 40);
    const all = [...first, ...second, ...third];
    await waitFor(
      () => all.every((id) => receiver.accepted.some((d) => d.petId === id)),
      TAKEOVER_BOUND_MS + 5000,
      'every pet delivered after the kill',
    );
    const tookOver = performance.now() - killedAt;
    assert.ok(delivering(survivor), 'the survivor took the subscription');
    t.diagnostic(`every pet delivered ${Math.round(tookOver)} ms after the kill`);
    assert.ok(tookOver <= TAKEOVER_BOUND_MS, `taken over in ${Math.round(tookOver)} ms`);
    // In order: each pet first arrives after every pet before it; a repeat carries the same webhook-id.
    const firstSeen = [...new Map(receiver.received.map((d) => [d.petId, d])).keys()];
    assert.deepEqual(
      [...new Set(receiver.received.map((d) => d.petId))],
      all,
      'first arrivals in id order, none skipped',
    );
    assert.equal(firstSeen.length, all.length);
    const ids = new Map<number, string>();
    for (const d of receiver.received) {
      assert.equal(ids.get(d.petId) ?? d.id, d.id, 'a repeat carries the same webhook-id');
      ids.set(d.petId, d.id);
    }
    assert.equal(receiver.unverified, 0, 'every signature verifies');
  });

  test('an instance that stops gives its leases up: the other delivers within 2 s', async (t) => {
    const url = await cluster().createDatabase();
    const receiver = await startReceiver(t);
    const added = await runCli(['webhooks', 'add', receiver.url, '--database-url', url, '--webhooks-allow-http']);
    assert.equal(added.code, 0, added.stderr);
    receiver.secrets = [/\n(whsec_\S+)\n$/.exec(added.stdout)?.[1] as string];
    const instances = await Promise.all([0, 1].map(() => spawnServerFor(t, ['--database-url', url, ...SERVE], ENV)));
    await waitFor(() => instances.some(delivering), 3000, 'one instance takes the subscription');
    const leaving = instances.find(delivering) as ServerProcess;
    const staying = instances.find((s) => s !== leaving) as ServerProcess;
    assert.equal(await stopProcess(leaving), 0);
    const stoppedAt = performance.now();
    const [id] = await createPets(staying.url, 1, 0);
    await waitFor(() => receiver.accepted.some((d) => d.petId === id), 2000, 'delivered by the other instance');
    t.diagnostic(`delivered ${Math.round(performance.now() - stoppedAt)} ms after the stop`);
    assert.equal(receiver.unverified, 0);
  });

  test("a subscription's start is in the database once webhooks add returns: a kill -9 before the take-up skips no pet", async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const receiver = await startReceiver(t);
    const first = await spawnServerFor(t, ['--database-url', url, ...SERVE], ENV);
    const before = await createPets(first.url, 2, 0);
    const added = await runCli(['webhooks', 'add', receiver.url, '--database-url', url, '--webhooks-allow-http']);
    assert.equal(added.code, 0, added.stderr);
    receiver.secrets = [/\n(whsec_\S+)\n$/.exec(added.stdout)?.[1] as string];
    const [stored] = await sql<Array<{ last: number }>>`SELECT last::float8 AS last FROM petstore.webhook_cursors`;
    assert.equal(stored?.last, before.at(-1), 'after the last pet id handed out when it was added');
    // Created and killed within the second in which the instance looks: it has most likely not taken it up.
    const created = await createPets(first.url, 1, 2);
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await spawnServerFor(t, ['--database-url', url, ...SERVE], ENV);
    created.push(...(await createPets(second.url, 1, 3)));
    // A lease the killed instance took is waited out first.
    await waitFor(() => receiver.accepted.some((d) => d.petId === created.at(-1)), TAKEOVER_BOUND_MS, 'delivered');
    assert.deepEqual([...new Set(receiver.accepted.map((d) => d.petId))], created, 'every pet since the add, in order');
    assert.equal(receiver.unverified, 0);
  });
}
