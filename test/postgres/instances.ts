/**
 * Several server processes on one database: what one acknowledges, all serve, in id order, with
 * nothing skipped by a reader polling with `after`, through a kill -9 and a restart; and the database
 * going away and coming back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { request, spawnServer, spawnServerFor, TEST_KEY, type ServerProcess } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { eventsOf, openStream } from '../stream-support.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
const ENV = { PETSTORE_API_KEYS: TEST_KEY };
const CLIENTS = 12;
const CREATES_PER_CLIENT = 30;
const KILL_AFTER = 120; // acknowledged creates before one instance is killed

interface Listed {
  id: number;
  name: string;
}

/** Every pet an instance lists, page by page with `after`. */
async function listAll(url: string): Promise<string[]> {
  const texts: string[] = [];
  let after = 0;
  for (;;) {
    const res = await request(url, 'GET', `/v1/pets?limit=100&after=${after}`);
    assert.equal(res.status, 200, res.text);
    const page = res.json as Listed[];
    // Each pet's own text (the names here hold no braces), to compare bytes, not parsed values.
    if (page.length > 0) texts.push(...res.text.slice(1, -1).split(/(?<=\}),(?=\{)/));
    if (page.length < 100) return texts;
    after = (page.at(-1) as Listed).id;
  }
}

export function instanceTests(cluster: () => Cluster): void {
  test('three instances on one database: every acknowledged pet once, the same everywhere, none skipped by a polling reader, through a kill -9', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const args = ['--database-url', url];
    const instances: ServerProcess[] = await Promise.all([0, 1, 2].map(() => spawnServer(args, ENV)));
    t.after(async () => {
      for (const s of instances) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
      await Promise.all(instances.map((s) => s.exited));
    });
    const urls = instances.map((s) => s.url);
    const down = new Set<number>();
    const acknowledged = new Map<string, string>(); // name → the 201 body
    const unanswered = new Set<string>(); // names whose create got no answer (the instance died)
    let killed = false;

    const killAndRestart = async (): Promise<void> => {
      down.add(1);
      const victim = instances[1] as ServerProcess;
      victim.child.kill('SIGKILL');
      await victim.exited;
      const restarted = await spawnServer(args, ENV);
      instances[1] = restarted;
      urls[1] = restarted.url;
      down.delete(1);
    };

    const client = async (c: number): Promise<void> => {
      for (let i = 0; i < CREATES_PER_CLIENT; i++) {
        let target = (c + i) % 3;
        while (down.has(target)) target = (target + 1) % 3;
        const name = `c${c}-${i}`;
        const body = `{"name":"${name}","categoryId":${BigInt(c) * 1_000_000_000_000n + BigInt(i)}${i % 2 === 0 ? ',"status":"available"' : ''}}`;
        try {
          const res = await request(urls[target] as string, 'POST', '/v1/pets', { headers: JSON_HEADERS, body });
          assert.equal(res.status, 201, res.text);
          acknowledged.set(name, res.text);
        } catch (error) {
          if (target !== 1 || !killed) throw error;
          unanswered.add(name); // a connection to the killed instance
        }
        if (!killed && acknowledged.size >= KILL_AFTER) {
          killed = true;
          await killAndRestart();
        }
      }
    };

    // The reader polls round-robin with the cursor it has seen last; ids must only ever grow.
    const seen: number[] = [];
    let writing = true;
    const newestAcknowledged = (): number =>
      Math.max(...[...acknowledged.values()].map((text) => (JSON.parse(text) as Listed).id));
    const reader = async (): Promise<void> => {
      for (let round = 0; ; round++) {
        const target = round % 3;
        if (down.has(target)) continue;
        let res;
        try {
          res = await request(urls[target] as string, 'GET', `/v1/pets?limit=100&after=${seen.at(-1) ?? 0}`);
        } catch (error) {
          if (target === 1 && killed) continue; // the killed instance, before its restart is known
          throw error;
        }
        assert.equal(res.status, 200, res.text);
        const page = res.json as Listed[];
        for (const p of page) {
          assert.ok(p.id > (seen.at(-1) ?? 0), `the reader got id ${p.id} after ${seen.at(-1)}`);
          seen.push(p.id);
        }
        // Done once it has the newest acknowledged pet: an instance's copy may lag behind the last commit.
        if (!writing && page.length === 0 && (seen.at(-1) ?? 0) >= newestAcknowledged()) return;
        await new Promise((r) => setTimeout(r, 5));
      }
    };

    const reading = reader();
    await Promise.all(Array.from({ length: CLIENTS }, (_, c) => client(c)));
    writing = false;
    await reading;

    assert.ok(killed, 'an instance was killed mid-way');
    const lists = await Promise.all(urls.map((u) => listAll(u)));
    assert.deepEqual(lists[1], lists[0], 'instance 2 lists exactly what instance 1 lists');
    assert.deepEqual(lists[2], lists[0], 'instance 3 lists exactly what instance 1 lists');
    const pets = (lists[0] as string[]).map((text) => ({ text, ...(JSON.parse(text) as Listed) }));
    const ids = pets.map((p) => p.id);
    assert.equal(new Set(ids).size, ids.length, 'ids are unique');
    assert.deepEqual(
      ids,
      [...ids].sort((a, b) => a - b),
      'listed in ascending id order',
    );
    const byName = new Map(pets.map((p) => [p.name, p]));
    assert.equal(byName.size, pets.length, 'no pet stored twice');
    for (const [name, text] of acknowledged)
      assert.equal(byName.get(name)?.text, text, `acknowledged ${name} is there, as answered`);
    for (const p of pets) assert.ok(acknowledged.has(p.name) || unanswered.has(p.name), `${p.name} was sent`);
    assert.deepEqual(seen, ids, 'the reader saw every pet, in order');
    t.diagnostic(`${acknowledged.size} acknowledged, ${unanswered.size} unanswered at the kill, ${pets.length} stored`);
  });

  test('when the database goes away: /readyz 503, creates 503 with Retry-After, reads 200 from the copy (503 above its newest), no crash, an open stream stays open; it resumes by itself', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const server = await spawnServerFor(t, ['--database-url', url], ENV);
    const post = (name: string): ReturnType<typeof request> =>
      request(server.url, 'POST', '/v1/pets', { headers: JSON_HEADERS, body: `{"name":"${name}","categoryId":1}` });
    const before = await post('before');
    assert.equal(before.status, 201);
    const stream = await openStream(server.url);
    t.after(() => stream.close());
    await stream.until(
      (text) => text === `retry: 1000\n\n${eventsOf([before.text])}`,
      5000,
      'the stream has the first pet',
    );

    await cluster().stop();
    try {
      const deadline = Date.now() + 5000;
      while ((await request(server.url, 'GET', '/readyz', { auth: false })).status !== 503) {
        assert.ok(Date.now() < deadline, '/readyz turns 503 within 5 s without any request');
        await new Promise((r) => setTimeout(r, 100));
      }
      const refused = await post('lost');
      assert.equal(refused.status, 503, refused.text);
      assert.equal((refused.json as { code: string }).code, 'unavailable');
      assert.equal(refused.headers['retry-after'], '1');
      for (const path of ['/v1/pets', '/v1/pets/1', '/v1/pets?status=available']) {
        const read = await request(server.url, 'GET', path);
        assert.equal(read.status, 200, `${path}: ${read.text}`);
      }
      // Above the copy's newest, the database is asked (it may hold a pet another instance just made).
      const above = await request(server.url, 'GET', '/v1/pets/2');
      assert.equal(above.status, 503, above.text);
      assert.equal(above.headers['retry-after'], '1');
      assert.match(above.text, /cannot be read right now/);
      assert.equal((await request(server.url, 'GET', '/healthz', { auth: false })).status, 200);
      assert.ok(!/ECONNREFUSED|postgres|127\.0\.0\.1/.test(refused.text), 'nothing internal in the answer');
    } finally {
      await cluster().start();
    }

    // A probe begun while the database restarted may wait out its connect_timeout before the next one.
    const deadline = Date.now() + 30_000;
    while ((await request(server.url, 'GET', '/readyz', { auth: false })).status !== 200) {
      assert.ok(Date.now() < deadline, '/readyz turns 200 again by itself once the database is back');
      await new Promise((r) => setTimeout(r, 100));
    }
    const after = await post('after');
    assert.equal(after.status, 201, after.text);
    await stream.until(
      (text) => text === `retry: 1000\n\n${eventsOf([before.text, after.text])}`,
      10_000,
      'the stream stayed open through the outage and has the new pet',
    );
    assert.deepEqual(
      ((await request(server.url, 'GET', '/v1/pets')).json as Listed[]).map((p) => p.name),
      ['before', 'after'],
    );
    assert.equal(server.child.exitCode, null, 'the server never stopped');
    assert.doesNotMatch(server.stderr(), /internal_error|"status":500/);
  });
}
