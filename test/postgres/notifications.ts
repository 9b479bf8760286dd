/**
 * A notification on the commit channel is a hint, never a fact: anyone who may connect may NOTIFY
 * it, with any payload, as often and in any order. An instance reads the table on a hint, so forged,
 * repeated and out-of-order notifications neither freeze its copy nor hide the pets to come; and a
 * hint that comes while a read runs is not dropped (it would wait for the backstop read).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import postgres from 'postgres';
import { CommitWatch } from '#dist/store/postgres/commit-watch.js';
import { PostgresStore } from '#dist/store/postgres/store.js';
import { startServer, waitFor, within, type TestServer } from '../support.js';
import type { Cluster } from '../postgres-support.js';
import { connect } from './store.js';

const NEW_PET = { name: 'Rex', categoryId: 1n, status: undefined } as const;
const JSON_HEADERS: Array<[string, string]> = [['content-type', 'application/json']];
/** What a pet may take from one instance's 201 to another's list here, notifications working (docs: a few ms). */
const LAG_MS = 500;
/** CommitWatch's BACKSTOP_MS: it reads the highest id this often whatever the notifications. */
const BACKSTOP_MS = 1000;

async function readyServer(t: { after(fn: () => Promise<void>): void }, url: string): Promise<TestServer> {
  const server = await startServer({ databaseUrl: url });
  t.after(() => server.close());
  const deadline = Date.now() + 10_000;
  while ((await server.request('GET', '/readyz', { auth: false })).status !== 200) {
    assert.ok(Date.now() < deadline, '/readyz 200 once the copy is filled');
    await new Promise((r) => setTimeout(r, 20));
  }
  return server;
}

/** The ids `server` lists. */
async function ids(server: TestServer): Promise<number[]> {
  return ((await server.request('GET', '/v1/pets?limit=100')).json as Array<{ id: number }>).map((p) => p.id);
}

export function notificationTests(cluster: () => Cluster): void {
  test('a NOTIFY forged by a role that may only connect freezes no instance: the other sees new pets within the lag, ' +
    'and a wait on it returns', { timeout: 60_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const one = await readyServer(t, url);
    const other = await readyServer(t, url);
    const role = `petstore_forger_${randomBytes(4).toString('hex')}`;
    await connect(t, url).unsafe(`CREATE ROLE ${role} LOGIN`); // CONNECT through PUBLIC, nothing more
    const forger = postgres(url.replace('postgres://postgres@', `postgres://${role}@`), { max: 1, onnotice: () => {} });
    t.after(() => forger.end({ timeout: 1 }));
    const create = async (name: string): Promise<number> => {
      const body = JSON.stringify({ name, categoryId: 1 });
      const res = await one.request('POST', '/v1/pets', { headers: JSON_HEADERS, body });
      assert.equal(res.status, 201, res.text);
      return (res.json as { id: number }).id;
    };

    // Forged, repeated, out of order: each round's notifications reach the listener before the pet's own.
    const top = '9007199254740991';
    const forgeries = [[top], [top, top], ['5', '1', '4'], ['1000'], ['2']];
    const made: number[] = [];
    for (const [round, payloads] of forgeries.entries()) {
      for (const payload of payloads) await forger`SELECT pg_notify('petstore_pets', ${payload})`;
      const waiting = other.request('GET', `/v1/pets?after=${made.length}&wait=30`);
      const began = performance.now();
      made.push(await create(`after forgery ${round}`));
      const answer = await within(waiting, 10_000, `round ${round}: the wait on the other instance`);
      const answered = (answer.json as Array<{ id: number }>).map((p) => p.id);
      assert.deepEqual(answered, [made.at(-1)], `round ${round}: the new pet`);
      for (let listed = await ids(other); listed.length < made.length; listed = await ids(other)) {
        assert.ok(performance.now() - began < LAG_MS, `round ${round}: listed by the other within ${LAG_MS} ms`);
      }
      assert.ok(performance.now() - began < LAG_MS, `round ${round}: answered within ${LAG_MS} ms`);
    }
    assert.deepEqual(await ids(other), made);
  });

  test('a hint that comes while a read of the highest id is running makes one more read: the pet committed ' +
    'meanwhile is heard at once, not at the next backstop read', { timeout: 30_000 }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const store = await PostgresStore.open(url); // another instance: it creates, and migrates the schema
    t.after(() => store.close());
    const readStarts: number[] = [];
    let gate: Promise<void> | undefined;
    let release: () => void = () => {};
    let held = false;
    const highestId = async (): Promise<number> => {
      readStarts.push(performance.now());
      const [row] = await sql`SELECT last_id::int AS id FROM petstore.pet_ids`;
      if (gate !== undefined) {
        held = true;
        await gate; // the read has what the table held; what commits now must come by a later read
      }
      return row?.id as number;
    };
    const watch = new CommitWatch({ url, statementTimeout: 5000, highestId, onError: () => {} });
    t.after(() => watch.close());
    const heard: Array<{ id: number; at: number }> = [];
    watch.add((id) => heard.push({ id, at: performance.now() }));
    await waitFor(() => readStarts.length === 1, 5000, 'the read after LISTEN');
    // Nothing commits or notifies: the next read is the backstop's, and the one after it is a second away.
    await waitFor(() => readStarts.length === 2, 2 * BACKSTOP_MS, 'the backstop read');
    const backstop = readStarts[1] as number;
    const seen = new Promise<void>((resolve) => void sql.listen('petstore_pets', () => resolve()));
    gate = new Promise((resolve) => (release = resolve));
    await sql`SELECT pg_notify('petstore_pets', 'read now')`;
    await waitFor(() => held, 5000, 'a read held after reading the table');
    gate = undefined;
    const pet = await store.create(NEW_PET);
    await within(seen, 5000, "the pet's NOTIFY, heard by another listener");
    await sleep(50); // the watch's own listening connection has it too by now
    release();
    await waitFor(() => heard.some((h) => h.id === Number(pet.id)), 3 * BACKSTOP_MS, 'the pet');
    const at = heard.find((h) => h.id === Number(pet.id))?.at as number;
    assert.ok(
      at - backstop < BACKSTOP_MS - 50,
      `heard ${Math.round(at - backstop)} ms after the backstop read, before the next one (${BACKSTOP_MS} ms)`,
    );
  });
}
