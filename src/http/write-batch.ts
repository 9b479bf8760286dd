/**
 * Answers written together: every answer made while the event loop reads its ready sockets is held
 * and written, in the order made, once that reading is done (`setImmediate` runs right after it).
 *
 * Why: on one machine a client that sleeps waiting for its answer must be woken by the server's
 * write, and on a virtual machine that wake-up (an interrupt sent to the other core) cost the server
 * as much per answer as authenticating and building a page together. Answers written back to back
 * wake a client once, not once each: under wrk at 10 and 50 connections a list of 20 cost 20 % less
 * CPU per answer (bench/results.md, "wrk against the lean floor"). An answer waits no longer than
 * the other requests of the same turn take; alone, it goes out in the same turn it was made in.
 */

type Job<A, B> = (a: A, b: B) => void;

// Flat triples (job, a, b), so that holding an answer allocates nothing; the two arrays swap on each run.
let waiting: unknown[] = [];
let spare: unknown[] = [];
let running = false;

/** Calls `job(a, b)` once the current turn's reading is done, after the jobs held before it. */
export function atTurnEnd<A, B>(job: Job<A, B>, a: A, b: B): void {
  waiting.push(job, a, b);
  if (waiting.length === 3) setImmediate(runWaiting);
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
  let failure: { error: unknown } | undefined;
  running = true;
  for (let i = 0; i < jobs.length; i += 3) {
    try {
      (jobs[i] as Job<unknown, unknown>)(jobs[i + 1], jobs[i + 2]);
    } catch (error) {
      // One job's throw must not keep the others' answers from going out; it is thrown once they have.
      failure ??= { error };
    }
  }
  running = false;
  jobs.length = 0;
  if (failure !== undefined) throw failure.error;
}
