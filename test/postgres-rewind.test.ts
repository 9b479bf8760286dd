/**
 * Rewind without a database: the pets an instance held when it saw the database away are looked for
 * once it is back (the first mark not yet looked for is kept beside the newest); a check cut short or
 * asked for again is run to its end; the copy is read again once.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import type { Sql } from 'postgres';
import { Rewind, type RewindOptions } from '#dist/store/postgres/rewind.js';
import { StoreUnavailableError } from '#dist/store/store.js';
import { tempDirFor } from './support.js';

/** A Rewind over a database whose lineage never changes and which holds the pets of `held`. */
function rewindOver(
  held: Map<number, string>,
  options: Partial<RewindOptions> = {},
): { rewind: Rewind; reasons: string[] } {
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
    ...options,
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

test('a check cut short by the database being away is tried again until it runs to its end', async () => {
  // The first statement after a restart failed on a connection the restart cut: nothing else asks again.
  let failures = 1;
  const { rewind, reasons } = rewindOver(pets(1, 2), {
    guard: (work) => (failures-- > 0 ? Promise.reject(new StoreUnavailableError('connection closed')) : work()),
  });
  rewind.remember(3, text(3));
  await rewind.check();
  assert.deepEqual(reasons, ['pet 3, which this instance saw committed, is missing in it']);
});

test('a check asked for while one runs is run after it, for the marks taken meanwhile', async () => {
  let release = (): void => {};
  const gate = new Promise<void>((resolve) => (release = resolve));
  const held = pets(1, 2, 3);
  const { rewind, reasons } = rewindOver(held, {
    readText: async (id) => {
      if (id === 2) await gate;
      return held.get(id);
    },
  });
  rewind.remember(2, text(2));
  const first = rewind.check(); // looks for pet 2 and waits there
  await new Promise((r) => setImmediate(r));
  rewind.remember(13, text(13)); // away again meanwhile, holding 13, which the database lost
  const second = rewind.check();
  release();
  await Promise.all([first, second]);
  assert.deepEqual(reasons, ['pet 13, which this instance saw committed, is missing in it']);
});

test('the copy is read again once, however long that waits behind the deadline of a statement', async (t) => {
  // A refill begun again would compare with the first one's new copy and find nothing lost.
  let refills = 0;
  const recovered: number[] = [];
  const directory = await tempDirFor(t, 'petstore-rewind-');
  const late = (): Promise<never> =>
    new Promise((_, reject) => setTimeout(() => reject(new StoreUnavailableError('late')), 20));
  const { rewind } = rewindOver(pets(1), {
    directory,
    guard: (work) => Promise.race([work(), late()]),
    refill: async () => {
      refills++;
      await new Promise((r) => setTimeout(r, 200));
      return refills === 1 ? [Buffer.from(text(2))] : [];
    },
    onRecovered: ({ lost }) => recovered.push(lost),
  });
  rewind.saw(2);
  rewind.wentBack('the test says so');
  // Bounded: begun again under the deadline, the refill would be begun again and again.
  await Promise.race([rewind.settled(), new Promise((r) => setTimeout(r, 3000))]);
  assert.equal(refills, 1);
  assert.deepEqual(recovered, [1]);
  const [file] = await readdir(directory);
  assert.equal(await readFile(join(directory, file as string), 'utf8'), `${Buffer.from(text(2)).toString()}\n`);
});

test('a database gone back is noticed by its WAL position even when the check that read it was cut short', async () => {
  // Checked at position 1000; back at 500 after a failover, where the first check fails looking for a mark.
  const positions = ['1000', '500', '520'];
  const sql = (() => {
    const position = positions.length > 1 ? positions.shift() : positions[0];
    return Object.assign(Promise.resolve([{ system: '7', timeline: '00000001', position }]), {
      execute: async () => [],
    });
  }) as unknown as Sql;
  let failures = 0;
  const held = pets(1, 2);
  const { rewind, reasons } = rewindOver(held, {
    sql,
    readText: async (id) => {
      if (failures++ === 0 && id === 2) throw new StoreUnavailableError('connection closed');
      return held.get(id);
    },
  });
  failures = 1; // the first check's lookup succeeds
  rewind.remember(2, text(2));
  await rewind.check();
  assert.deepEqual(reasons, []);
  failures = 0; // the next one's first lookup fails
  rewind.remember(2, text(2));
  await rewind.check();
  assert.deepEqual(reasons, ['its WAL position went back from 1000 to 500 bytes']);
});

test('a WAL position read behind one seen before means the database went back', () => {
  const { rewind, reasons } = rewindOver(pets(1));
  rewind.position(1000n, rewind.positionFloor());
  rewind.position(1200n, rewind.positionFloor());
  assert.deepEqual(reasons, []);
  rewind.position(500n, rewind.positionFloor());
  assert.deepEqual(reasons, ['its WAL position went back from 1200 to 500 bytes']);
});

test('reads of the WAL position that end out of order are not a step back', () => {
  const { rewind, reasons } = rewindOver(pets(1));
  const first = rewind.positionFloor();
  const second = rewind.positionFloor();
  rewind.position(1200n, second);
  rewind.position(1000n, first); // began before the other ended: compared with what was seen then
  assert.deepEqual(reasons, []);
});

test('a read of the WAL position begun before a went back is not compared after it', async () => {
  const { rewind, reasons } = rewindOver(pets(1));
  rewind.position(1000n, rewind.positionFloor());
  const before = rewind.positionFloor();
  rewind.wentBack('the test says so');
  await rewind.settled();
  rewind.position(500n, before); // saw the database before it went back
  rewind.position(500n, rewind.positionFloor());
  rewind.position(520n, rewind.positionFloor());
  assert.deepEqual(reasons, ['the test says so']);
});
