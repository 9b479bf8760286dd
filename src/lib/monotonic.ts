/**
 * Milliseconds on the monotonic clock: it only moves forward, whatever is done to the wall clock (an
 * NTP correction, a restored VM, `date -s`). Its origin is arbitrary, so only differences mean
 * anything: every interval and deadline is measured on it; Date.now() is kept for what is shown or
 * stored as a date. process.hrtime's [seconds, nanoseconds] form: called on every authenticated request,
 * it is the cheapest monotonic reading (bench/results.md, "Issue 34").
 */
export function monotonicMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1e3 + nanoseconds / 1e6;
}

/**
 * Whole seconds from `now` to `deadline` (both in monotonic ms), rounded up: whoever waits that long
 * finds the deadline passed (Retry-After, RateLimit's `t`). A nanosecond is taken off first: the
 * difference of two large fractional values can be a hair over a whole second, which would round a
 * 600-s window up to 601 s.
 */
export function secondsUntil(deadline: number, now: number): number {
  return Math.ceil((deadline - now - 1e-6) / 1000);
}
