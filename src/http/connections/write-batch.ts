import { AsyncResource } from 'node:async_hooks';

/**
 * Answers written together: every answer made while the event loop reads its ready sockets is held
 * and written, in the order made, once that reading is done (`setImmediate` runs right after it).
 *
 * Why: on one machine a client that sleeps waiting for its answer must be woken by the server's
 * write, and on a virtual machine that wake-up (an interrupt sent to the other core) cost the server
 * 18 % of its CPU under wrk. Answers written back to back wake a client once, not once each: under
 * wrk a list of 20 cost 23.7 µs of CPU per answer before and 19.8 µs after (bench/results.md,
 * "Issue 34", third round). An answer waits no longer than the other requests of the same turn
 * take; alone, it goes out in the same turn it was made in.
 */

type Job<A, B> = (a: A, b: B) => void;

// Flat quadruples (job, a, b, the async context it was held in); the two arrays swap on each run.
let waiting: unknown[] = [];
let spare: unknown[] = [];
let running = false;

/**
 * Calls `job(a, b)` once the current turn's reading is done, after the jobs held before it, in the
 * async context of this call: an embedder's AsyncLocalStorage, and the callbacks of the writes the
 * job makes, see the request the job answers, not the one whose answer started the batch (40 ns).
 */
export function atTurnEnd<A, B>(job: Job<A, B>, a: A, b: B): void {
  waiting.push(job, a, b, new AsyncResource('PetstoreAnswer'));
  if (waiting.length === 4) setImmediate(runWaiting);
}

/**
 * Runs the held jobs now, for code about to ask whether a request was answered (`headersSent`): an
 * answer made is an answer given. The turn's own run then finds nothing left. Inside a run, the
 * jobs held are already going out in order, and it does nothing.
 */
export function writeHeldNow(): void {
  if (!running && waiting.length > 0) runWaiting();
}

function runWaiting(): void {
  // Jobs held while these run (one answer's write ending another request) wait for the next turn.
  const jobs = waiting;
  waiting = spare;
  spare = jobs;
  running = true;
  for (let i = 0; i < jobs.length; i += 4) {
    try {
      (jobs[i + 3] as AsyncResource).runInAsyncScope(jobs[i] as Job<unknown, unknown>, null, jobs[i + 1], jobs[i + 2]);
    } catch (error) {
      // One job's throw keeps no other answer from going out, nor the caller of writeHeldNow from
      // going on; each is thrown again on its own, as an uncaught exception, once this run is done.
      queueMicrotask(() => {
        throw error;
      });
    }
  }
  running = false;
  jobs.length = 0;
}
