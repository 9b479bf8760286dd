/**
 * A destination that hangs or refuses writes: the store goes on at full speed, the directory
 * destination never has more than one file call outstanding, each failed round is counted by its
 * reason, one line says replication fell behind and one that it caught up, and everything arrives.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { FileStore } from '#dist/store/file/file-store.js';
import {
  DirectoryDestination,
  nodeDirectoryCalls,
  type DirectoryCalls,
} from '#dist/store/file/replication/destinations/directory-destination.js';
import { Replicator } from '#dist/store/file/replication/replicator.js';
import { positionKeys, readPosition } from '#dist/store/file/replication/replica.js';
import { runCli, waitFor, within } from './support.js';
import { dataDir } from './store-support.js';

/** The real calls, made to hang (never return until released) or fail with a code while `mode` says so. */
function faultyCalls(): {
  calls: DirectoryCalls;
  mode: { now: 'ok' | 'hang' | 'EACCES' };
  outstanding: () => number;
  most: () => number;
  release: () => void;
} {
  const mode: { now: 'ok' | 'hang' | 'EACCES' } = { now: 'ok' };
  let outstanding = 0;
  let most = 0;
  const held: Array<() => void> = [];
  const wrap =
    <A extends unknown[], R>(real: (...args: A) => Promise<R>) =>
    async (...args: A): Promise<R> => {
      outstanding++;
      most = Math.max(most, outstanding);
      try {
        if (mode.now === 'hang') await new Promise<void>((r) => held.push(r));
        if (mode.now === 'EACCES') throw Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES' });
        return await real(...args);
      } finally {
        outstanding--;
      }
    };
  const calls = Object.fromEntries(
    Object.entries(nodeDirectoryCalls).map(([name, fn]) => [name, wrap(fn as (...a: unknown[]) => Promise<unknown>)]),
  ) as unknown as DirectoryCalls;
  return {
    calls,
    mode,
    outstanding: () => outstanding,
    most: () => most,
    release: () => held.splice(0).forEach((r) => r()),
  };
}

interface Line {
  level: string;
  msg: string;
  fields: Record<string, unknown> | undefined;
}

async function replicating(
  t: import('node:test').TestContext,
  calls: DirectoryCalls,
  compactAfterBytes?: number,
  now?: () => number,
) {
  let done = async (): Promise<void> => {};
  // Registered before dataDir's hook, so that the store is closed before its directory goes.
  t.after(() => done());
  const root = await dataDir(t);
  const store = await FileStore.open(join(root, 'data'), compactAfterBytes === undefined ? {} : { compactAfterBytes });
  const lines: Line[] = [];
  const logger = {
    request() {},
    info: (msg: string, fields?: Record<string, unknown>) => void lines.push({ level: 'info', msg, fields }),
    error: (msg: string) => void lines.push({ level: 'error', msg, fields: undefined }),
    warn: (msg: string, fields?: Record<string, unknown>) => void lines.push({ level: 'warn', msg, fields }),
  };
  const destination = new DirectoryDestination(join(root, 'replica'), calls, 200);
  const replicator = await Replicator.start({
    dataDir: join(root, 'data'),
    store,
    destination,
    intervalMs: 50,
    logger,
    retentionMs: 86_400_000,
    now,
  });
  replicator.begin();
  done = async () => {
    done = async () => {};
    await replicator.stop();
    await store.close();
  };
  return { store, replicator, destination, lines, root };
}

/**
 * The journal bytes of the newest position, read through a destination of its own: the replicator's
 * 200-ms call timeout is for the faults under test, not for this read on a busy machine.
 */
async function newestShippedBytes(replicas: DirectoryDestination): Promise<number> {
  const destination = new DirectoryDestination(replicas.name);
  const keys = await positionKeys(destination);
  const { position } = await readPosition(destination, keys.at(-1) as string);
  return position.files.filter((f) => f.name.startsWith('pets-journal.')).reduce((sum, f) => sum + f.length, 0);
}

test('a destination that hangs: creates go on, one file call at most is outstanding, timeouts and busy rounds are counted, and it all arrives once the calls return', async (t) => {
  const fault = faultyCalls();
  const { store, replicator, destination, lines } = await replicating(t, fault.calls);
  await waitFor(() => replicator.stats().lastSuccess !== undefined, 5000, 'the first position');
  fault.mode.now = 'hang';
  const began = Date.now();
  for (let i = 0; i < 200; i++)
    await within(
      store.create({ name: `pet ${i}`, categoryId: '1' } as never),
      2000,
      'a create while the destination hangs',
    );
  const createsMs = Date.now() - began;
  await waitFor(
    () => (replicator.stats().failures.get('timeout') ?? 0) >= 1 && (replicator.stats().failures.get('busy') ?? 0) >= 1,
    5000,
    'a timeout, then busy rounds',
  );
  assert.equal(fault.most(), 1, 'never two file calls at once');
  assert.equal(fault.outstanding(), 1, 'the hung call is still out');
  assert.ok(replicator.stats().lagBytes > 0);
  assert.ok(replicator.stats().lagSeconds > 0);
  assert.equal(
    lines.filter((l) => l.msg.startsWith('replication is falling behind')).length,
    1,
    'one line, however many rounds fail',
  );
  assert.equal(lines.find((l) => l.msg.startsWith('replication is falling behind'))?.level, 'warn');
  fault.mode.now = 'ok';
  fault.release();
  await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 5000, 'caught up');
  assert.equal(lines.filter((l) => l.msg === 'replication has caught up').length, 1);
  assert.equal(await newestShippedBytes(destination), store.durableJournal().length);
  t.diagnostic(`200 creates while the destination hung: ${createsMs} ms`);
});

test('a destination that refuses writes: rounds counted as refused, the store unaffected, and it catches up when writes are allowed again', async (t) => {
  const fault = faultyCalls();
  const { store, replicator, destination, lines } = await replicating(t, fault.calls);
  await waitFor(() => replicator.stats().lastSuccess !== undefined, 5000, 'the first position');
  fault.mode.now = 'EACCES';
  for (let i = 0; i < 50; i++) await store.create({ name: `pet ${i}`, categoryId: '1' } as never);
  await waitFor(() => (replicator.stats().failures.get('refused') ?? 0) >= 2, 5000, 'refused rounds');
  assert.equal(store.ready, true);
  assert.deepEqual([...replicator.stats().failures.keys()], ['refused']);
  assert.equal(lines.filter((l) => l.msg.startsWith('replication is falling behind')).length, 1);
  assert.equal(lines.find((l) => l.msg.startsWith('replication is falling behind'))?.fields?.reason, 'refused');
  fault.mode.now = 'ok';
  await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 5000, 'caught up');
  assert.equal(await newestShippedBytes(destination), store.durableJournal().length);
  assert.equal(lines.filter((l) => l.msg === 'replication has caught up').length, 1);
});

test('30 s offline while pets are created and the journals compacted: everything arrives once the destination is back, and restores', async (t) => {
  const fault = faultyCalls();
  // The replicator's clock, moved on by hand: 30 s of outage pass in as many rounds as it takes to fail.
  let skipped = 0;
  const now = (): number => Date.now() + skipped;
  const { store, replicator, lines, root } = await replicating(t, fault.calls, 2000, now);
  await waitFor(() => replicator.stats().lastSuccess !== undefined, 5000, 'the first position');
  fault.mode.now = 'EACCES';
  const refused = (): number => replicator.stats().failures.get('refused') ?? 0;
  for (let i = 0; i < 60; i++) {
    await store.create({ name: `offline ${i}`, categoryId: '1' } as never);
    skipped += 500;
    const before = refused();
    await waitFor(() => refused() > before, 5000, `a refused round after create ${i}`);
  }
  assert.ok(store.durableJournal().generation > 1, 'the journals were compacted while offline');
  assert.ok(replicator.stats().lagSeconds >= 29, `lag ${replicator.stats().lagSeconds} s after 30 s offline`);
  fault.mode.now = 'ok';
  await waitFor(() => replicator.stats().lagBytes === 0 && replicator.stats().lagSeconds === 0, 10_000, 'caught up');
  assert.equal(lines.filter((l) => l.msg.startsWith('replication is falling behind')).length, 1);
  assert.equal(lines.filter((l) => l.msg === 'replication has caught up').length, 1);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', join(root, 'replica')]);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, new RegExp(`^restored ${store.size} pets \\(last id ${store.size}\\)`));
  t.diagnostic(
    `${store.size} pets created during 30 s offline, journal generation ${store.durableJournal().generation} at the end`,
  );
});
