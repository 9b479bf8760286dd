/**
 * Milliseconds on the monotonic clock: it only moves forward, whatever is done to the wall clock (an
 * NTP correction, a restored VM, `date -s`). Its origin is arbitrary, so only differences mean
 * anything: every interval and deadline is measured on it; Date.now() is kept for what is shown or
 * stored as a date. process.hrtime, not performance.now: the latter loads all of perf_hooks.
 */
export function monotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}
