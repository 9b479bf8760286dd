/**
 * An address that flooded is forgotten MEMORY_MS (10 s) after the last sign of it even when no turn of
 * the first reads comes: its next connection is read at once, and the server keeps no entry for every
 * address that ever flooded. The clock (process.hrtime) and the timers are the test's.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { Server, Socket } from 'node:net';
import { test, type TestContext } from 'node:test';
import { FirstReads } from '#dist/http/connections/first-reads.js';

/** A socket as FirstReads sees it: its address, whether it is closed, whether it was resumed (read). */
function socketFrom(address: string): Socket & { read: boolean } {
  const socket = Object.assign(new EventEmitter(), {
    remoteAddress: address,
    destroyed: false,
    read: false,
    resume() {
      socket.read = true;
      return socket;
    },
  });
  return socket as unknown as Socket & { read: boolean };
}

/** The clock in seconds, moved by the test. */
function clock(t: TestContext): { advance(ms: number): void } {
  let ms = 1e9;
  t.mock.method(process, 'hrtime', () => [Math.floor(ms / 1000), (ms % 1000) * 1e6]);
  return { advance: (by) => (ms += by) };
}

/** Lets the turns that flooding() schedules run (setImmediate is not mocked). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

test('an address that flooded and sends nothing for 10 s is forgotten without a turn: its next connection is read at once', async (t) => {
  const now = clock(t);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const server = new EventEmitter() as unknown as Server;
  const reads = new FirstReads();
  reads.serve(server);

  reads.flooding(socketFrom('10.0.0.1'));
  await turn();
  // Within its 10 s, a new connection of that address waits for its turn.
  const early = socketFrom('10.0.0.1');
  server.emit('connection', early);
  assert.equal(early.read, false, 'put off while the address floods');
  // Its turn comes (64 turns), and it is read; then nothing more of that address.
  for (let i = 0; i < 70 && !early.read; i++) await turn();
  assert.equal(early.read, true, 'read in its turn');

  now.advance(10_000);
  t.mock.timers.tick(10_000);
  const later = socketFrom('10.0.0.1');
  server.emit('connection', later);
  assert.equal(later.read, true, 'forgotten: read at once');
});

test('an address that keeps flooding is kept: its time runs from the last sign', async (t) => {
  const now = clock(t);
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const server = new EventEmitter() as unknown as Server;
  const reads = new FirstReads();
  reads.serve(server);

  reads.flooding(socketFrom('10.0.0.2'));
  now.advance(6000);
  reads.flooding(socketFrom('10.0.0.2'));
  await turn();
  now.advance(4000);
  t.mock.timers.tick(10_000);
  const socket = socketFrom('10.0.0.2');
  server.emit('connection', socket);
  assert.equal(socket.read, false, 'still flooding 4 s after its last sign');
});
