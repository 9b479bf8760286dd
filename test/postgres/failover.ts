/**
 * A database that went back: the failover to an asynchronous standby that had not received the last
 * commits, simulated on the throwaway cluster (stopped, its directory copied, started; pets created;
 * stopped at once and the copy put back). The instances notice, refuse creates until the id counter
 * is past every id they saw, read their copies again and write the lost pets to a file: no id
 * acknowledged before is acknowledged again for another pet, and no ETag names two pets.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { jsonLogger } from '#dist/lib/logger.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { StoreUnavailableError } from '#dist/store/store.js';
import { startServer, tempDirFor, waitFor, type TestServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];

interface Instance {
  server: TestServer;
  log(): string;
}

async function instance(t: { after(fn: () => Promise<void>): void }, url: string): Promise<Instance> {
  let lines = '';
  const sink = { write: (text: string) => (lines += text) };
  const server = await startServer({ databaseUrl: url, logger: jsonLogger('info', sink, sink) });
  t.after(() => server.close());
  await ready(server);
  return { server, log: () => lines };
}

async function ready(server: TestServer): Promise<void> {
  const deadline = Date.now() + 20_000;
  while ((await server.request('GET', '/readyz', { auth: false })).status !== 200) {
    assert.ok(Date.now() < deadline, '/readyz 200');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The 201's text; 503s (the database away, or a recovery under way) are tried again, for 30 s at most,
 * with an Idempotency-Key, as clients are told to: a 503 after the database restarted may come from a
 * create that was stored all the same.
 */
async function create(server: TestServer, name: string, refused: string[] = []): Promise<string> {
  const headers: Array<[string, string]> = [...JSON_HEADERS, ['idempotency-key', name]];
  for (const deadline = Date.now() + 30_000; ; ) {
    const res = await server.request('POST', '/v1/pets', { headers, body: JSON.stringify({ name, categoryId: 1 }) });
    if (res.status === 201) return res.text;
    assert.equal(res.status, 503, res.text);
    refused.push(res.text);
    assert.ok(Date.now() < deadline, `${name}: created within 30 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const idOf = (text: string): number => (JSON.parse(text) as { id: number }).id;

export function failoverTests(cluster: () => Cluster): void {
  test('after a failover that lost the last commits no id is acknowledged twice: creates wait for the id counter, ' +
    'copies are read again, the lost pets are in a file', { timeout: 240_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const one = await instance(t, url);
    const other = await instance(t, url);
    const kept: string[] = [];
    for (let i = 1; i <= 10; i++) kept.push(await create(one.server, `kept${i}`));

    // The standby: a copy of the cluster as it is now.
    await cluster().stop();
    await cluster().copyData();
    await cluster().start();
    const lost: string[] = [];
    for (let i = 1; i <= 3; i++) lost.push(await create(one.server, `lostInFailover${i}`));
    assert.deepEqual(lost.map(idOf), [11, 12, 13]);
    for (const { server } of [one, other]) {
      // Listed: in the instance's copy (a getPet above the copy's newest would ask the database).
      for (const deadline = Date.now() + 10_000; ; ) {
        const listed = (await server.request('GET', '/v1/pets?after=12')).text;
        if (listed === `[${lost[2]}]`) break;
        assert.ok(Date.now() < deadline, `pet 13 in the copies of both instances: ${listed}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }
    const lostEtag = (await other.server.request('GET', '/v1/pets/11')).headers.etag;

    // The failover: the primary is gone at once, the standby takes over without pets 11 to 13.
    await cluster().stop();
    await cluster().restoreData();
    await cluster().start();
    const sql = connect(t, url);
    // The pets, not the counter: an instance that reconnected first may already have moved the counter on.
    const [newest] = await sql`SELECT max(id)::int AS id FROM petstore.pets`;
    assert.deepEqual(newest, { id: 10 }, 'the database went back');

    const refused: string[] = [];
    const after = [
      await create(one.server, 'newAfterFailover1', refused),
      await create(other.server, 'newAfterFailover2', refused),
    ];
    for (const text of after) assert.ok(idOf(text) > 13, `${text}: an id past every id acknowledged before`);
    for (const { server, log } of [one, other]) {
      // An instance notices at its first statement after the database was away, or once it listens again.
      for (const deadline = Date.now() + 60_000; !log().includes('"msg":"creates are taken again'); ) {
        assert.ok(Date.now() < deadline, `the recovery is over within 60 s: ${log()}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      await ready(server);
      for (const id of [11, 12, 13]) {
        const got = await server.request('GET', `/v1/pets/${id}`);
        assert.equal(got.status, 404, `pet ${id} is lost, not another pet: ${got.text}`);
      }
      const headers: Array<[string, string]> = [['if-none-match', lostEtag as string]];
      const conditional = await server.request('GET', '/v1/pets/11', { headers });
      assert.equal(conditional.status, 404, 'the old ETag names no pet now');
      const expected = `[${[...kept, ...after].sort((a, b) => idOf(a) - idOf(b)).join(',')}]`;
      // Within the backstop's second, or past the deadline of a read left hanging on a connection the restart cut (10 s).
      for (const deadline = Date.now() + 25_000; ; ) {
        const listed = (await server.request('GET', '/v1/pets?limit=100')).text;
        if (listed === expected || Date.now() > deadline) {
          assert.equal(listed, expected, "the database's pets, read again, and the other instance's new one");
          break;
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    }

    // Each instance saw 11 to 13, so each writes them to a file of its own, and says where.
    for (const { server, log } of [one, other]) {
      // Whichever it meets first: the counter behind, the WAL position behind the one it saw, or a lost pet gone
      // (once another instance moved the counter on): 13, or 11 or 12 if it held only those when it saw it away, or
      // when the read of the counter began (one queued before the failover and answered by the database after it).
      const noticed = new RegExp(
        '"msg":"the database went back \\((its id counter is at 10, below id 1[123], which this ' +
          'instance saw committed|its WAL position went back from \\d+ to \\d+ bytes|' +
          'pet 1[123], which this instance saw committed, is missing in it)\\)',
        'g',
      );
      // The lines that say why, and the log's end: the whole log once came out empty in the TAP output.
      const why = log()
        .split('\n')
        .filter((line) => line.includes('went back') || line.includes('taken again'));
      assert.equal(log().match(noticed)?.length, 1, `${why.join('\n')}\n…\n${log().slice(-3000)}`);
      const files = (await readdir(server.dataDir)).filter((name) => /^lost-pets-.*\.jsonl$/.test(name));
      assert.equal(files.length, 1, `lost-pets files: [${files}]\n${why.join('\n')}`);
      const file = join(server.dataDir, files[0] as string);
      const written = await readFile(file, 'utf8');
      assert.equal(written, lost.map((text) => `${text}\n`).join(''), 'the lost pets, exactly as acknowledged');
      assert.ok(log().includes(`the 3 pets the database lost are in ${file}`), log());
    }
  });

  test('a create that reaches a database gone back before anything else noticed is refused in its own statement, ' +
    'and its id is never one handed out before', { timeout: 60_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const wentBack: string[] = [];
    const recovered: number[] = [];
    const store = await PostgresStore.open(url, {
      lostPetsDirectory: await tempDirFor(t, 'petstore-lost-'),
      onWentBack: ({ reason }) => wentBack.push(reason),
      onRecovered: ({ lost }) => recovered.push(lost),
    });
    t.after(() => store.close());
    await waitFor(() => store.ready, 5000, 'the copy filled');
    const pet = { name: 'Rex', categoryId: 1n, status: undefined } as const;
    for (let i = 0; i < 3; i++) await store.create(pet);
    // Pets 2 and 3 lost, the counter back at 1, as after a failover; no notification tells of it.
    await sql.begin(async (tx) => {
      await tx`ALTER TABLE petstore.pets DISABLE TRIGGER pets_immutable`;
      await tx`DELETE FROM petstore.pets WHERE id > 1`;
      await tx`ALTER TABLE petstore.pets ENABLE TRIGGER pets_immutable`;
      await tx`UPDATE petstore.pet_ids SET last_id = 1`;
    });
    await assert.rejects(store.create(pet), StoreUnavailableError, 'refused: its id would have been 2 again');
    assert.match(wentBack.join(), /its id counter is at 1, below id 3/);
    await waitFor(() => recovered.length === 1, 10_000, 'the recovery');
    assert.deepEqual(recovered, [2], 'pets 2 and 3 written to the file');
    assert.equal((await store.create(pet)).id, 4, 'past every id handed out before');
  });
}
