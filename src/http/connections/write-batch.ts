import { AsyncResource } from 'node:async_hooks';

/**
 * Answers written together: every answer made while the event loop reads its ready sockets is held
 * and written, in the order made, once that reading is done (`setImmediate` runs right after it).
 *
 * Why: a client that sleeps waiting for its answer must be woken by the server's write, and on a
 * virtual machine that wake-up is dear; answers written back to back wake a client once, not once
 * each (figures in bench/results.md, "Issue 34", third round). An answer waits no longer than the
 * other requests of the same turn take; alone, it goes out in the same turn it was made in.
 */

type Job<A, B> = (a: A, b: B) => void;

/** One service's held answers: services embedded side by side each hold and write their own. */
export class WriteBatch {
  // Flat quadruples (job, a, b, the async context it was held in); the two arrays swap on each run.
  #waiting: unknown[] = [];
  #spare: unknown[] = [];
  #running = false;
  readonly #run = (): void => this.#runWaiting();

  /**
   * Calls `job(a, b)` once the current turn's reading is done, after the jobs held before it, in the
   * async context of this call: an embedder's AsyncLocalStorage, and the callbacks of the writes the
   * job makes, see the request the job answers, not the one whose answer started the batch.
   */
  atTurnEnd<A, B>(job: Job<A, B>, a: A, b: B): void {
    this.#waiting.push(job, a, b, new AsyncResource('PetstoreAnswer'));
    if (this.#waiting.length === 4) setImmediate(this.#run);
  }

  /**
   * Runs the held jobs now, for code about to ask whether a request was answered (`headersSent`): an
   * answer made is an answer given. The turn's own run then finds nothing left. Inside a run, the
   * jobs held are already going out in order, and it does nothing.
   */
  writeHeldNow(): void {
    if (!this.#running && this.#waiting.length > 0) this.#runWaiting();
  }

  #runWaiting(): void {
    // Jobs held while these run (one answer's write ending another request) wait for the next turn.
    const jobs = this.#waiting;
    this.#waiting = this.#spare;
    this.#spare = jobs;
    this.#running = true;
    for (let i = 0; i < jobs.length; i += 4) {
      try {
        const job = jobs[i] as Job<unknown, unknown>;
        (jobs[i + 3] as AsyncResource).runInAsyncScope(job, null, jobs[i + 1], jobs[i + 2]);
      } catch (error) {
        // One job's throw keeps no other answer from going out, nor the caller of writeHeldNow from
        // going on; each is thrown again on its own, as an uncaught exception, once this run is done.
        queueMicrotask(() => {
          throw error;
        });
      }
    }
    this.#running = false;
    jobs.length = 0;
  }
}
