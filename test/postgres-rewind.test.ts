/**
 * Rewind's marks, without a database: the pets an instance held when it saw the database away are
 * looked for once it is back. The first mark not yet looked for is kept beside the newest.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Sql } from 'postgres';
import { Rewind } from '#dist/store/postgres/rewind.js';

/** A Rewind over a database whose lineage never changes and which holds the pets of `held`. */
function rewindOver(held: Map<number, string>): { rewind: Rewind; reasons: string[] } {
  const lineage = [{ system: '7', timeline: '00000001', position: '1000' }];
  const sql = (() => Object.assign(Promise.resolve(lineage), { execute: async () => [] })) as unknown as Sql;
  const reasons: string[] = [];
  const rewind = new Rewind({
    sql,
    guard: (work) => work(),
    refill: undefined,
    readText: async (id) => held.get(id),
    directory: '/nonexistent',
    onWentBack: ({ reason }) => reasons.push(reason),
    onRecovered: () => {},
    onError: (error) => assert.fail(String(error)),
  });
  return { rewind, reasons };
}

const text = (id: number): Uint8Array => Buffer.from(`{"id":${id},"name":"pet ${id}"}`);
const pets = (...ids: number[]): Map<number, string> =>
  new Map(ids.map((id) => [id, Buffer.from(text(id)).toString()]));

test('a copy that read on between two outages without a check: the newer pet, lost, is noticed', async () => {
  // Away once holding 9 (no check followed), read on to 13, away again: the database came back without 10 to 13.
  const { rewind, reasons } = rewindOver(pets(...Array.from({ length: 9 }, (_, i) => i + 1)));
  rewind.remember(9, text(9));
  rewind.remember(13, text(13));
  await rewind.check();
  assert.deepEqual(reasons, ['pet 13, which this instance saw committed, is missing in it']);
});

test('pets read on top from a database that came back do not hide the loss of the one held before', async () => {
  // Away holding 13; the database came back without 11 to 13, another instance created 14 and 15, read on top.
  const { rewind, reasons } = rewindOver(pets(...Array.from({ length: 10 }, (_, i) => i + 1), 14, 15));
  rewind.remember(13, text(13));
  rewind.remember(15, text(15));
  await rewind.check();
  assert.deepEqual(reasons, ['pet 13, which this instance saw committed, is missing in it']);
});

test('marks found are looked for once; a database that holds them went nowhere', async () => {
  const held = pets(1, 2, 3);
  const { rewind, reasons } = rewindOver(held);
  rewind.remember(2, text(2));
  rewind.remember(3, text(3));
  await rewind.check();
  assert.deepEqual(reasons, []);
  // Looked for: a later check does not look for them again (the next outage takes marks of its own).
  held.delete(3);
  await rewind.check();
  assert.deepEqual(reasons, []);
});
