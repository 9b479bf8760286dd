/**
 * Points in time (docs/operations.md, "Replication"): `restore --until <id>` gives back every pet up
 * to that id and none above it, `--until <time>` the newest state at or before it, a point outside
 * what the destination holds is refused naming the nearest one, and `restore --list` prints them all.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { test } from 'node:test';
import { runCli, startServer, waitFor } from './support.js';
import { post, shiftedClock, stopsFor } from './replication-support.js';
import { dataDir } from './store-support.js';

/** A server that ships only at its start and its stop: each run makes two positions, the first as the run found the directory. */
async function run(
  t: import('node:test').TestContext,
  dir: string,
  replica: string,
  lineages: number,
  from: number,
  to: number,
): Promise<void> {
  const servers = stopsFor(t);
  const server = await startServer({ dataDir: dir, replicateTo: replica, replicateInterval: 3600 });
  servers.push(server);
  // The round at the start ships the directory as it found it; the creates come after it.
  const firsts = async (): Promise<number> => (await readdir(join(replica, 'lineages')).catch(() => [])).length;
  await waitFor(async () => (await firsts()) >= lineages + 1, 5000, 'the round at the start shipped');
  const created = await Promise.all(
    Array.from({ length: to - from + 1 }, (_, i) => post(server.url, `pet ${from + i}`)),
  );
  assert.deepEqual(
    created.map((r) => r.status),
    created.map(() => 201),
  );
  await server.stop();
}

test('restore --until <id> gives every pet up to the id and none above, from a position that holds pets past it; --list shows every point', async (t) => {
  const root = await dataDir(t);
  const dir = join(root, 'data');
  const replica = join(root, 'replica');
  await run(t, dir, replica, 0, 1, 10);
  await run(t, dir, replica, 1, 11, 20);

  const listed = await runCli(['restore', '--list', '--from', replica]);
  assert.equal(listed.code, 0, listed.stderr);
  const rows = listed.stdout
    .trim()
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/ +/));
  assert.deepEqual(
    rows.map(([, generation, seq, , highest, pets]) => [generation, seq, highest, pets]),
    [
      ['1', '1', '0', '0'],
      ['1', '2', '10', '10'],
      ['2', '1', '10', '10'],
      ['2', '2', '20', '20'],
    ],
  );
  const [first, second] = rows as [string[], string[]];

  const exact = await runCli(['restore', join(root, 'fifteen'), '--from', replica, '--until', '15']);
  assert.equal(exact.code, 0, exact.stderr);
  assert.match(exact.stdout, /^restored 15 pets \(last id 15\)/);
  const server = await startServer({ dataDir: join(root, 'fifteen') });
  t.after(() => server.stop());
  const page = (await server.request('GET', '/v1/pets?limit=100')).json as Array<{ id: number; name: string }>;
  assert.deepEqual(
    page.map((pet) => pet.id),
    Array.from({ length: 15 }, (_, i) => i + 1),
  );
  assert.equal((await server.request('GET', '/v1/pets/16')).status, 404);

  const past = await runCli(['restore', join(root, 'past'), '--from', replica, '--until', '25']);
  assert.equal(past.code, 1);
  assert.match(
    past.stderr,
    /--until 25 is past the newest restore point of .*, which holds pets up to id 20 \(.*\): .*restore without --until/,
  );

  const atTime = await runCli(['restore', join(root, 'at-time'), '--from', replica, '--until', second[3] as string]);
  assert.equal(atTime.code, 0, atTime.stderr);
  assert.match(atTime.stdout, /^restored 10 pets \(last id 10\)/);
  const after = await runCli([
    'restore',
    join(root, 'after'),
    '--from',
    replica,
    '--until',
    new Date(Date.now() + 60_000).toISOString(),
  ]);
  assert.equal(after.code, 1);
  assert.match(
    after.stderr,
    /is after the newest restore point of .*: what was created after it is not there; restore without --until for it\n$/,
  );
  const before = await runCli([
    'restore',
    join(root, 'before'),
    '--from',
    replica,
    '--until',
    new Date(Date.parse(first[3] as string) - 1000).toISOString(),
  ]);
  assert.equal(before.code, 1);
  assert.match(
    before.stderr,
    new RegExp(`is before the oldest restore point of .* \\(${first[3]}, lineage ${first[0]}, position 1\\)`),
  );
});

test('restore --until refuses a time that is no date (February 30th, hour 24) or carries no zone, instead of another time', async (t) => {
  const root = await dataDir(t);
  for (const until of [
    '2026-02-30T00:00:00Z',
    '2026-11-27T24:00:00Z',
    '2026-11-27T01:30:00',
    '2026-11-27T01:30Z junk',
  ]) {
    const refused = await runCli([
      'restore',
      join(root, 'restored'),
      '--from',
      join(root, 'replica'),
      '--until',
      until,
    ]);
    assert.equal(refused.code, 2, `${until}: ${refused.stderr}`);
    assert.match(refused.stderr, /--until must be a pet id or an ISO 8601 time with its zone/);
  }
});

test('a restore hours after the newest position skips ids for the rate the store handed them out at, not just a million', async (t) => {
  const servers = stopsFor(t);
  const root = await dataDir(t);
  const replica = join(root, 'replica');
  await run(t, join(root, 'data'), replica, 0, 1, 100);
  // 100 ids in a few seconds, then 3 hours without a position: the lost store may have handed out millions more.
  const later = await shiftedClock(root, 3 * 3600_000);
  const restored = await runCli(['restore', join(root, 'restored'), '--from', replica], later);
  assert.equal(restored.code, 0, restored.stderr);
  assert.match(restored.stdout, /^restored 100 pets/);
  const server = await startServer({ dataDir: join(root, 'restored') });
  servers.push(server);
  const next = await post(server.url, 'after the restore');
  assert.equal(next.status, 201, next.text);
  const id = (next.json as { id: number }).id;
  assert.ok(id > 100 + 1_000_000 + 200_000, `an id past the million and the rate's part (2 × rate × 3 h), got ${id}`);
});
