/**
 * The rules of the group-commit statement (src/store/postgres/batch.ts) that only races between
 * instances show, pinned down one step at a time with the database's own locks: batches commit in
 * id order, so a reader paging with `after` never sees a gap that later fills; and an idempotency key
 * is never deleted as expired by a batch that began before another instance renewed it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { PostgresStore } from '#dist/store/postgres/store.js';
import type { Cluster } from '../postgres-support.js';
import { connect, holdIds } from './store.js';
import { waitFor } from '../support.js';

type Sql = ReturnType<typeof connect>;

/** `promise`'s outcome if it settled within `ms`, else 'pending'. */
async function settledWithin<T>(promise: Promise<T>, ms: number): Promise<T | 'pending'> {
  return Promise.race([promise, sleep(ms).then(() => 'pending' as const)]);
}

/** Waits until `count` petstore sessions wait for a lock. */
async function lockWaiters(sql: Sql, count: number): Promise<void> {
  const waiting = async () => {
    const [row] =
      await sql`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'petstore' AND wait_event_type = 'Lock'`;
    return row?.n === count;
  };
  await waitFor(waiting, 10_000, `${count} sessions wait for a lock`);
}

async function ids(sql: Sql): Promise<number[]> {
  return (await sql`SELECT id::int FROM petstore.pets ORDER BY id`).map((r) => r.id as number);
}

/** Holds the row of an idempotency key, as a statement of another instance about to renew it would, until `release()`. */
async function holdKey(sql: Sql, scope: string, key: string): Promise<{ release: () => Promise<void> }> {
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  let locked: () => void = () => {};
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = sql.begin(async (tx) => {
    await tx`SELECT 1 FROM petstore.idempotency_keys WHERE scope = ${scope} AND key = ${key} FOR UPDATE`;
    locked();
    await held;
  });
  await isLocked;
  return {
    release: async () => {
      release();
      await holder;
    },
  };
}

export function orderingTests(cluster: () => Cluster): void {
  test('a batch that took its ids first commits first: the batch of another instance waits, and a reader paging with after never sees a gap that later fills', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const first = await PostgresStore.open(url, { idempotencyWindow: 1 });
    t.after(() => first.close());
    const second = await PostgresStore.open(url);
    t.after(() => second.close());
    const key = { scope: 'scope-a', key: 'slow' };
    assert.equal((await first.createOnce({ name: 'Keyed', categoryId: 1n }, key)).pet.id, 1);
    await sleep(1100); // past the window: the next create with the key takes its row again

    // The first store's batch takes id 2, then waits for the key's row, holding the id row until its COMMIT.
    const keyRow = await holdKey(sql, key.scope, key.key);
    const slow = first.createOnce({ name: 'Slow', categoryId: 2n }, key);
    await lockWaiters(sql, 1);
    const fast = second.create({ name: 'Fast', categoryId: 3n });
    await lockWaiters(sql, 2);
    const seen: number[][] = [];
    let reading = true;
    const reader = (async () => {
      while (reading) {
        seen.push((await second.list({ after: 0, limit: 100 })).pets.map((p) => p.id));
        await sleep(5);
      }
    })();
    assert.equal(await settledWithin(fast, 500), 'pending', "the second batch waits for the first one's COMMIT");
    assert.deepEqual(await ids(sql), [1]);
    await keyRow.release();
    assert.equal((await slow).pet.id, 2);
    assert.equal((await fast).id, 3);
    await sleep(50);
    reading = false;
    await reader;
    assert.deepEqual(await ids(sql), [1, 2, 3]);
    for (const list of seen)
      assert.deepEqual(list, [1, 2, 3].slice(0, list.length), `the reader saw ${list.join(',')}: never 3 without 2`);
    assert.ok(
      seen.some((list) => list.length === 1),
      'the reader looked while the batches waited',
    );
  });

  test('an idempotency key renewed by another instance after a batch began is not deleted as expired by that batch', {
    timeout: 120_000,
  }, async (t) => {
    const url = await cluster().createDatabase();
    const sql = connect(t, url);
    const renewing = await PostgresStore.open(url, { idempotencyWindow: 1 });
    t.after(() => renewing.close());
    const other = await PostgresStore.open(url, { idempotencyWindow: 1 });
    t.after(() => other.close());
    const key = { scope: 'scope-a', key: 'renewed' };
    await renewing.createOnce({ name: 'First', categoryId: 1n }, key);
    await sleep(1100); // the key is past its window

    const ids = await holdIds(sql);
    // In the queue for the id row: first the create that renews the key, then a batch that began
    // while the key was still expired (its snapshot says so) and deletes expired keys on its way.
    const renewed = renewing.createOnce({ name: 'Second', categoryId: 2n }, key);
    await lockWaiters(sql, 1);
    const unrelated = other.create({ name: 'Unrelated', categoryId: 3n });
    await lockWaiters(sql, 2);
    await ids.release();
    assert.deepEqual((await renewed).pet, { id: 2, name: 'Second', categoryId: 2n });
    assert.equal((await unrelated).id, 3);
    assert.deepEqual(
      [...(await sql`SELECT key, pet_id::int FROM petstore.idempotency_keys`)],
      [{ key: 'renewed', pet_id: 2 }],
      'the renewed key is kept',
    );
    assert.deepEqual(await renewing.createOnce({ name: 'Second', categoryId: 2n }, key), {
      pet: { id: 2, name: 'Second', categoryId: 2n },
      replayed: true,
    });
  });
}
