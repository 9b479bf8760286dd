/**
 * The choice of the connection closed for room at the limit (SlotLimiter), on stand-in sockets
 * so that the turns of the event loop in which they arrive are the test's to choose.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import { test } from 'node:test';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { SlotLimiter } from '#dist/http/connections/slot-limiter.js';

/** What SlotLimiter reads of a socket, and whether it was destroyed. */
class StandIn extends EventEmitter {
  destroyed = false;
  bytesRead = 0;
  constructor(
    readonly remoteAddress: string,
    readonly remotePort: number,
  ) {
    super();
  }

  destroy(): void {
    this.destroyed = true;
  }
}

let port = 40_000;
const socket = (address = '127.0.0.1'): Socket & StandIn => new StandIn(address, port++) as unknown as Socket & StandIn;

test('connections accepted in this turn of the event loop or the one before are not closed for room: the new one is refused instead', async () => {
  const sockets = new SlotLimiter(2);
  const [a, b, c] = [socket(), socket(), socket()];
  sockets.add(a);
  sockets.add(b);
  sockets.add(c); // same turn: a and b may have their requests waiting unread
  assert.deepEqual([a.destroyed, b.destroyed, c.destroyed], [false, false, true]);
  assert.equal(sockets.refused, 1);
  await nextTurn();
  const d = socket();
  sockets.add(d); // one turn later: still too soon
  assert.equal(d.destroyed, true);
  await nextTurn();
  await nextTurn();
  const e = socket();
  sockets.add(e); // two turns after the last accept: the oldest is closed for it
  assert.deepEqual([a.destroyed, b.destroyed, e.destroyed], [true, false, false]);
  assert.deepEqual([sockets.evicted, sockets.refused, sockets.size], [1, 2, 2]);
});

test('after a quiet spell the connections of one burst can all be closed for room: those of the address holding the most first, else the oldest', async () => {
  const sockets = new SlotLimiter(3);
  const [a, b, c] = [socket('10.0.0.1'), socket('10.0.0.2'), socket('10.0.0.2')];
  for (const s of [a, b, c]) sockets.add(s);
  for (let i = 0; i < 5; i++) await nextTurn();
  const fromTwo = socket('10.0.0.2');
  sockets.add(fromTwo);
  assert.deepEqual(
    [a.destroyed, b.destroyed, c.destroyed, fromTwo.destroyed],
    [false, true, false, false],
    'the oldest of the address holding two',
  );
  for (let i = 0; i < 3; i++) await nextTurn();
  sockets.busy(c); // c brings a request: not closed for room while it is in progress
  const fromThree = socket('10.0.0.3');
  sockets.add(fromThree);
  assert.deepEqual(
    [a.destroyed, c.destroyed, fromThree.destroyed],
    [true, false, false],
    'between addresses holding one each, the oldest of all',
  );
  c.emit('close');
  assert.equal(sockets.size, 2, 'a closed socket leaves its slot');
});

test('a connection is closable again once its answers have ended, as the newest closable one', async () => {
  const sockets = new SlotLimiter(2);
  const [a, b] = [socket(), socket()];
  sockets.add(a);
  sockets.add(b);
  sockets.busy(a);
  for (let i = 0; i < 3; i++) await nextTurn();
  sockets.idle(a); // its answer ended: idle on keep-alive, after b in line
  for (let i = 0; i < 3; i++) await nextTurn();
  const c = socket();
  sockets.add(c);
  assert.deepEqual(
    [a.destroyed, b.destroyed, c.destroyed],
    [false, true, false],
    'b, silent longer than a has been idle',
  );
  for (let i = 0; i < 3; i++) await nextTurn();
  const d = socket();
  sockets.add(d);
  assert.deepEqual([a.destroyed, d.destroyed], [true, false], 'then a');
});

test("the address holding the most loses one, whatever the new one's address", async () => {
  const sockets = new SlotLimiter(4);
  const mine = socket('10.0.0.1');
  const theirs = [socket('10.0.0.2'), socket('10.0.0.2'), socket('10.0.0.2')];
  sockets.add(mine);
  for (const s of theirs) sockets.add(s);
  for (let i = 0; i < 3; i++) await nextTurn();
  sockets.add(socket('10.0.0.1'));
  assert.deepEqual([mine.destroyed, ...theirs.map((s) => s.destroyed)], [false, true, false, false]);
});

test('a connection closable for less than 50 ms is spared while an older one can be closed instead', async () => {
  const sockets = new SlotLimiter(3);
  const old = socket('10.0.0.1');
  sockets.add(old);
  await new Promise((resolve) => setTimeout(resolve, 60));
  const young = [socket('10.0.0.2'), socket('10.0.0.2')];
  for (const s of young) sockets.add(s);
  for (let i = 0; i < 3; i++) await nextTurn();
  sockets.add(socket('10.0.0.3'));
  assert.deepEqual(
    [old.destroyed, ...young.map((s) => s.destroyed)],
    [true, false, false],
    'the older one, though its address holds fewer',
  );
  sockets.add(socket('10.0.0.3'));
  assert.deepEqual(
    young.map((s) => s.destroyed),
    [true, false],
    'none that old: the young ones can be closed all the same',
  );
});

test('only addresses with a closable connection are looked through, and an address leaves that set once it has none, busy or closed', () => {
  const sockets = new SlotLimiter();
  const a = [socket('10.0.0.1'), socket('10.0.0.1')];
  const b = socket('10.0.0.2');
  for (const s of [...a, b]) sockets.add(s);
  assert.equal(sockets.closableAddresses, 2, 'accepted, nothing asked yet');
  sockets.busy(a[0] as Socket);
  assert.equal(sockets.closableAddresses, 2, 'the other connection of 10.0.0.1 is still closable');
  sockets.busy(a[1] as Socket);
  sockets.busy(b);
  assert.equal(sockets.closableAddresses, 0, 'every connection busy');
  sockets.idle(b);
  assert.equal(sockets.closableAddresses, 1, 'idle again');
  b.emit('close');
  for (const s of a) s.emit('close');
  assert.deepEqual([sockets.closableAddresses, sockets.size], [0, 0], 'closed: nothing kept of any address');
});
