/**
 * The commit watch on its own (commit-watch.ts), against a real database: a commit made while the
 * listening connection was down is read once LISTEN is back, even when no poll could read it
 * meanwhile; and a NOTIFY whose payload is not an id (`1e300`, `1e3`, ` 7`, `-1` …) is only a hint
 * to read the table, so that it cannot hide the pets committed after it.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CommitWatch } from '#dist/store/postgres/commit-watch.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { waitFor } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const NEW_PET = { name: 'Rex', categoryId: 1n, status: undefined } as const;

export function commitWatchTests(cluster: () => Cluster): void {
  test('a commit made while the listening connection was down and no poll could read it is heard once LISTEN is back', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const store = await PostgresStore.open(url); // another instance: it creates, and migrates the schema
    t.after(() => store.close());
    const role = `petstore_watch_${randomBytes(4).toString('hex')}`;
    await sql.unsafe(`CREATE ROLE ${role} SUPERUSER LOGIN`);
    const listening = async (): Promise<number> => {
      // A connection whose LISTEN has completed.
      const [row] =
        await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE usename = ${role} AND application_name = 'petstore-listen' AND state = 'idle' AND query LIKE 'LISTEN%'`;
      return row?.n as number;
    };
    // The highest id can be read only while the listening connection is up: as when the database
    // is away for both, the polls while it is down find nothing, and only the read after LISTEN can.
    const highestId = async (): Promise<number> => {
      if ((await listening()) === 0)
        throw Object.assign(new Error('the database is away (for this test)'), { code: 'ECONNREFUSED' });
      const [row] = await sql`SELECT last_id::int AS id FROM petstore.pet_ids`;
      return row?.id as number;
    };
    const errors: unknown[] = [];
    const watch = new CommitWatch({
      url: url.replace('postgres://postgres@', `postgres://${role}@`),
      statementTimeout: 5000,
      highestId,
      onError: (e) => errors.push(e),
    });
    t.after(() => watch.close());
    const heard: number[] = [];
    watch.add((id) => heard.push(id));
    await waitFor(async () => (await listening()) === 1, 5000, 'it listens');
    await store.create(NEW_PET);
    await waitFor(() => heard.length === 1, 5000, 'the first commit, by NOTIFY');

    await sql.unsafe(`ALTER ROLE ${role} NOLOGIN`);
    await sql`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = ${role} AND application_name = 'petstore-listen'`;
    await waitFor(async () => (await listening()) === 0, 5000, 'the listening connection is gone');
    await store.create(NEW_PET); // its NOTIFY reaches nobody
    await sleep(600); // two polls, both finding the database away
    assert.deepEqual(heard, [1], 'not heard while down: no poll could read it');

    await sql.unsafe(`ALTER ROLE ${role} LOGIN`);
    await waitFor(async () => (await listening()) === 1, 5000, 'it listens again');
    await waitFor(() => heard.length >= 2, 2000, 'the commit made while down, once it listens again');
    assert.deepEqual(
      heard,
      [1, 2],
      'the commit made while it was down, read once LISTEN was back, before any later commit',
    );
    // The refused login is reported, once; the polls finding the database away are not.
    assert.equal(errors.length, 1, String(errors));
    assert.match(String(errors[0]), /not permitted to log in/);
  });

  test('a NOTIFY whose payload is not an id is only a hint: the pets committed after it are still heard', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const store = await PostgresStore.open(url);
    t.after(() => store.close());
    let reads = 0;
    const highestId = async (): Promise<number> => {
      reads++;
      const [row] = await sql`SELECT last_id::int AS id FROM petstore.pet_ids`;
      return row?.id as number;
    };
    const watch = new CommitWatch({ url, statementTimeout: 5000, highestId, onError: () => {} });
    t.after(() => watch.close());
    const heard: number[] = [];
    watch.add((id) => heard.push(id));
    await waitFor(() => reads === 1, 5000, 'the read after LISTEN');
    for (const payload of [
      '1e300',
      '1e3',
      '9007199254740993',
      ' 7',
      '7 ',
      '0x10',
      '+5',
      '5.0',
      '-1',
      '0',
      '',
      'Infinity',
    ]) {
      await sql`SELECT pg_notify('petstore_pets', ${payload})`;
    }
    await store.create(NEW_PET);
    await waitFor(() => heard.length > 0, 5000, 'the pet committed after the payloads');
    await sleep(100); // any later notification would have arrived by now
    assert.deepEqual(heard, [1], 'only the committed id, none of the payloads');
  });
}
