import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { monotonicMs } from '../lib/monotonic.js';

// Above this share of the last window spent running, the process is busy: the API comes first.
const BUSY = 0.7;
const WINDOW_MS = 100;
// While busy, one attempt at most every GAP_MS across every subscription (figures in bench/results.md, "Webhooks").
const GAP_MS = 10;

/**
 * The pace of delivery attempts, shared by every subscription: as fast as receivers answer while the
 * event loop has room; rationed while it is busy (the API's requests waiting behind deliveries),
 * so that a backlog of deliveries never takes the server's time from its clients. Looked at every
 * 100 ms from the event loop's utilisation, on an unref'd timer.
 */
export class Pace {
  #last: EventLoopUtilization = performance.eventLoopUtilization();
  #busy = false;
  #next = 0;
  readonly #timer: NodeJS.Timeout;

  constructor() {
    this.#timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      this.#busy = performance.eventLoopUtilization(now, this.#last).utilization >= BUSY;
      this.#last = now;
    }, WINDOW_MS).unref();
  }

  /** Milliseconds the next attempt must wait before it starts; 0 while the process has room. */
  delay(): number {
    if (!this.#busy) return 0;
    const now = monotonicMs();
    const at = Math.max(now, this.#next);
    this.#next = at + GAP_MS;
    return at - now;
  }

  stop(): void {
    clearInterval(this.#timer);
  }
}
