/**
 * When an event stream counts its client as stalled (EventStream.tick), on stand-ins for its response
 * and its feed, so that which heartbeats see progress is the test's to choose: only heartbeats in a
 * row without a byte taken cut a stream, never as many spread over a slow but steady reader's time.
 */
import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { test } from 'node:test';
import { EventStream } from '#dist/http/feed/event-stream.js';
import type { Feed } from '#dist/http/feed/feed.js';

/** What EventStream reads of its response: a full buffer, and its writes' callbacks, run when the test says. */
class StandInResponse extends EventEmitter {
  writableNeedDrain = true;
  writableLength = 1;
  destroyed = false;
  readonly #taken: Array<() => void> = [];

  write(_text: string, taken: () => void): boolean {
    this.#taken.push(taken);
    return false;
  }

  /** The kernel took the oldest chunk: its write's callback runs. */
  take(): void {
    this.#taken.shift()?.();
  }

  destroy(): void {
    this.destroyed = true;
  }

  end(): void {}
}

function standInFeed(): Feed {
  const said: string[] = [];
  return {
    hold() {},
    release() {},
    latest: 0,
    streamLifetimeMs: 60_000,
    logger: { info: (msg: string) => void said.push(msg), error() {}, request() {} },
    pets: () => new Promise(() => {}), // the stream's buffer stays full: it never reads on
  } as unknown as Feed;
}

test('a stream is cut after two heartbeats in a row without progress, not after two with progress between them', () => {
  const res = new StandInResponse();
  const stream = new EventStream(standInFeed(), res as unknown as ServerResponse, undefined, 0, undefined);
  stream.start({ pets: [], more: false } as never, 0);
  stream.tick(); // nothing taken since the start: stalled once
  assert.equal(res.destroyed, false);
  res.take(); // a slow reader takes a chunk
  stream.tick(); // progress: the count starts again
  stream.tick(); // stalled once more, the first time in a row
  assert.equal(res.destroyed, false, 'a reader that took something between two stalled heartbeats is not cut');
  stream.tick(); // the second in a row
  assert.equal(res.destroyed, true, 'two heartbeats in a row without progress cut it');
});
