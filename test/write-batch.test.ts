/**
 * write-batch.ts holds each answer until the event loop has read all its ready sockets, then writes
 * them together: in the order made, none lost, none held past the turn, and one that throws keeping
 * no other from going out.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { test } from 'node:test';
import { setImmediate as turn } from 'node:timers/promises';
import { atTurnEnd, writeHeldNow } from '#dist/http/connections/write-batch.js';

test('jobs run once the turn they were held in is done, in the order held, each with its two arguments', async () => {
  const ran: string[] = [];
  const job = (a: string, b: number): void => {
    ran.push(`${a}${b}`);
  };
  atTurnEnd(job, 'a', 1);
  atTurnEnd(job, 'b', 2);
  atTurnEnd(job, 'c', 3);
  assert.deepEqual(ran, [], 'nothing runs while the turn goes on');
  await turn();
  assert.deepEqual(ran, ['a1', 'b2', 'c3']);
});

test('a job held by a running job runs in the next turn, and the turns after hold and run as before', async () => {
  const ran: string[] = [];
  atTurnEnd(
    (name: string) => {
      ran.push(name);
      atTurnEnd((later: string) => ran.push(later), 'held while running', undefined);
    },
    'first',
    undefined,
  );
  await turn();
  assert.deepEqual(ran, ['first']);
  await turn();
  assert.deepEqual(ran, ['first', 'held while running']);
  atTurnEnd((name: string) => ran.push(name), 'a later turn', undefined);
  await turn();
  assert.deepEqual(ran, ['first', 'held while running', 'a later turn']);
});

test("writeHeldNow runs the held jobs at once (a request asked about is answered), and the turn's own run finds none left", async () => {
  const ran: string[] = [];
  const job = (name: string): void => {
    ran.push(name);
  };
  atTurnEnd(job, 'a', undefined);
  atTurnEnd(job, 'b', undefined);
  writeHeldNow();
  assert.deepEqual(ran, ['a', 'b']);
  await turn();
  assert.deepEqual(ran, ['a', 'b'], 'nothing runs twice');
  atTurnEnd(job, 'c', undefined);
  await turn();
  assert.deepEqual(ran, ['a', 'b', 'c']);
});

test('writeHeldNow from inside a run does nothing: the jobs of the run keep their order, one held meanwhile waits its turn', async () => {
  const ran: string[] = [];
  const job = (name: string): void => {
    ran.push(name);
  };
  atTurnEnd(
    () => {
      ran.push('1');
      atTurnEnd(job, '3', undefined);
      writeHeldNow();
    },
    undefined,
    undefined,
  );
  atTurnEnd(job, '2', undefined);
  await turn();
  assert.deepEqual(ran, ['1', '2']);
  await turn();
  assert.deepEqual(ran, ['1', '2', '3']);
});

test('a job that throws keeps no other from running; its error is thrown once they have', () => {
  const batch = resolve(__dirname, '../http/connections/write-batch.js');
  const script = `
    const { atTurnEnd } = require(${JSON.stringify(batch)});
    process.on('exit', (code) => console.log('exit', code));
    atTurnEnd(() => console.log('one'), 0, 0);
    atTurnEnd(() => { throw new Error('planted'); }, 0, 0);
    atTurnEnd(() => console.log('three'), 0, 0);
  `;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 10_000 });
  assert.equal(run.stdout, 'one\nthree\nexit 1\n', run.stderr);
  assert.match(run.stderr, /Error: planted/);
});
