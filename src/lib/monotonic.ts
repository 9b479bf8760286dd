/**
 * Milliseconds on the monotonic clock: it only moves forward, whatever is done to the wall clock (an
 * NTP correction, a restored VM, `date -s`). Its origin is arbitrary, so only differences mean
 * anything: every interval and deadline is measured on it; Date.now() is kept for what is shown or
 * stored as a date. process.hrtime, not performance.now: the latter loads all of perf_hooks. Its
 * [seconds, nanoseconds] form, not the bigint: 77 ns a call against 107 (Date.now: 69), and it is
 * called on every authenticated request.
 */
export function monotonicMs(): number {
  const [seconds, nanoseconds] = process.hrtime();
  return seconds * 1e3 + nanoseconds / 1e6;
}

/**
 * Whole seconds from `now` to `deadline` (both in monotonic ms), rounded up: whoever waits that long
 * finds the deadline passed (Retry-After, RateLimit's `t`). The difference of two large fractional
 * millisecond values is off by nanoseconds — 600,000 ms after 16,234,567.891 comes out as
 * 600,000.0000000019 ms away, a quarter of such times do at four hours of uptime — and rounding that
 * up told clients 601 s for a 600-s window; a nanosecond less is taken off first.
 */
export function secondsUntil(deadline: number, now: number): number {
  return Math.ceil((deadline - now - 1e-6) / 1000);
}
