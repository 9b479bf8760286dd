/**
 * Waiting requests and event streams across instances on one database: a pet committed through one
 * instance reaches the streams and waiting requests of another (LISTEN/NOTIFY), and while the
 * listening connection is down and cannot come back, the highest id is polled instead. A key removed
 * from the database ends its streams and waits on every instance.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { request, runCli, startServer, waitFor, within, type TestServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { eventsOf, openStream, parseEvents } from '../stream-support.js';
import { connect } from './store.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

async function create(server: TestServer, name: string, status?: string): Promise<string> {
  const res = await server.request('POST', '/v1/pets', {
    headers: JSON_HEADERS,
    body: JSON.stringify({ name, categoryId: 1, ...(status === undefined ? {} : { status }) }),
  });
  assert.equal(res.status, 201, res.text);
  return res.text;
}

export function feedTests(cluster: () => Cluster): void {
  test('a pet committed through one instance reaches the streams and waiting requests of another, every one, in id order', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const one = await startServer({ databaseUrl: url });
    t.after(() => one.close());
    const other = await startServer({ databaseUrl: url });
    t.after(() => other.close());
    const stored = await create(one, 'Stored');
    const stream = await openStream(other.url);
    t.after(() => stream.close());
    await stream.until((text) => text === `retry: 1000\n\n${eventsOf([stored])}`, 10_000, 'the stored pet');
    const waiting = other.request('GET', '/v1/pets?status=sold&after=1&wait=30');
    await sleep(200);

    // Both instances create at once: their batches interleave under the id row lock.
    const texts = await Promise.all(
      Array.from({ length: 40 }, (_, i) => create(i % 2 === 0 ? one : other, `P${i}`, i === 25 ? 'sold' : 'pending')),
    );
    await stream.until(
      (text) => parseEvents(text).length === 41,
      10_000,
      'every pet on the stream of the other instance',
    );
    const byId = new Map([stored, ...texts].map((text) => [Number(/^\{"id":(\d+)/.exec(text)?.[1]), text]));
    const ids = [...byId.keys()].sort((a, b) => a - b);
    assert.equal(
      stream.text(),
      `retry: 1000\n\n${eventsOf(ids.map((id) => byId.get(id) as string))}`,
      'in id order, each as the API answers it',
    );
    const answer = await within(waiting, 10_000, 'the waiting request');
    assert.equal(
      answer.text,
      `[${texts[25]}]`,
      'the waiting request got the sold pet, created through either instance',
    );
  });

  test("with its listening connection cut and unable to log in again, an instance still learns of other instances' pets by polling; listening resumes once it can", {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    // The second instance logs in as a role of its own, so that its new connections alone can be refused.
    const role = `petstore_feed_${randomBytes(4).toString('hex')}`;
    await sql.unsafe(`CREATE ROLE ${role} SUPERUSER LOGIN`);
    const one = await startServer({ databaseUrl: url });
    t.after(() => one.close());
    const other = await startServer({ databaseUrl: url.replace('postgres://postgres@', `postgres://${role}@`) });
    t.after(() => other.close());
    const listening = async (): Promise<number> => {
      const [row] =
        await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${role} AND application_name = 'petstore-listen'`;
      return row?.n as number;
    };
    await waitFor(async () => (await listening()) === 1, 10_000, 'the second instance listens');
    // Its pool's connections stay open and keep serving; only new logins will be refused.
    await Promise.all(Array.from({ length: 6 }, () => other.request('GET', '/v1/pets')));
    const stream = await openStream(other.url);
    t.after(() => stream.close());
    await stream.until((text) => text === 'retry: 1000\n\n', 5000, 'the stream is open');

    await sql.unsafe(`ALTER ROLE ${role} NOLOGIN`);
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ${role} AND application_name = 'petstore-listen'`;
    await waitFor(async () => (await listening()) === 0, 5000, 'the listening connection is gone');
    const polled = [await create(one, 'Polled 1'), await create(one, 'Polled 2')];
    await stream.until(
      (text) => text === `retry: 1000\n\n${eventsOf(polled)}`,
      5000,
      'pets created through the first instance, found by polling',
    );
    assert.equal(await listening(), 0, 'not by listening: its connection could not come back');

    await sql.unsafe(`ALTER ROLE ${role} LOGIN`);
    await waitFor(async () => (await listening()) === 1, 5000, 'it listens again');
    const notified = await create(one, 'Notified');
    await stream.until(
      (text) => text === `retry: 1000\n\n${eventsOf([...polled, notified])}`,
      5000,
      'and pets reach it again',
    );
  });

  test('a key removed from the database ends its stream and answers its waiting request 401 on an instance that did not remove it', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    // Asked every 20 ms until the key is read (every second): past 30 failures a minute the address would be
    // refused with 429, the key's first answers too, whenever the read came late (a loaded machine).
    const server = await startServer({ databaseUrl: url, authFailureLimit: 1_000_000 });
    t.after(() => server.close());
    const created = await runCli(['keys', 'create', '--database-url', url]);
    assert.equal(created.code, 0, created.stderr);
    const id = /^created key ([^\s;]+)/.exec(created.stdout)?.[1] as string;
    const key = created.stdout.trim().split('\n').at(-1) as string;
    const accepted = async () => (await request(server.url, 'GET', '/v1/pets', { auth: key })).status === 200;
    await waitFor(accepted, 5000, 'the instance reads the new key');
    const stream = await openStream(server.url, '/v1/pets', [], key);
    t.after(() => stream.close());
    assert.equal(stream.status, 200);
    const waiting = server.request('GET', '/v1/pets?wait=30', { auth: key });
    await sleep(200);
    assert.equal((await runCli(['keys', 'revoke', id, '--database-url', url])).code, 0);
    // The instance reads the keys every second; one more for the query.
    assert.equal(await within(stream.ended, 3000, "the stream's end"), 'end');
    const answer = await within(waiting, 3000, "the waiting request's answer");
    assert.equal(answer.status, 401, answer.text);
    await create(server, 'After');
    assert.deepEqual(parseEvents(stream.text()), [], "no pet reached the removed key's stream");
  });
}
