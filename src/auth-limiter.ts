/**
 * Counts failed authentications per client address in fixed one-minute windows. Past the limit the
 * address is refused until its window ends. No timer: expired entries are swept when the table grows.
 */
export class AuthLimiter {
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #maxAddresses: number;
  #failures = new Map<string, { count: number; resetAt: number }>();

  constructor(limit: number, windowMs = 60_000, maxAddresses = 10_000) {
    this.#limit = limit;
    this.#windowMs = windowMs;
    this.#maxAddresses = maxAddresses;
  }

  /** Seconds until `address` may try again, or 0 when it is not blocked. */
  blockedFor(address: string, now: number): number {
    const entry = this.#failures.get(address);
    if (entry === undefined || entry.count < this.#limit) return 0;
    if (now >= entry.resetAt) {
      this.#failures.delete(address);
      return 0;
    }
    return Math.ceil((entry.resetAt - now) / 1000);
  }

  recordFailure(address: string, now: number): void {
    const entry = this.#failures.get(address);
    if (entry !== undefined && now < entry.resetAt) {
      entry.count++;
      return;
    }
    if (entry === undefined && this.#failures.size >= this.#maxAddresses) this.#sweep(now);
    this.#failures.set(address, { count: 1, resetAt: now + this.#windowMs });
  }

  #sweep(now: number): void {
    for (const [address, entry] of this.#failures) if (now >= entry.resetAt) this.#failures.delete(address);
    // Still full of live entries (a flood from many addresses): forget the oldest rather than grow.
    for (const address of this.#failures.keys()) {
      if (this.#failures.size < this.#maxAddresses) break;
      this.#failures.delete(address);
    }
  }
}
