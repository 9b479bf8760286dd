import { secondsUntil } from '../lib/monotonic.js';

/**
 * Counts failed authentications per client address in fixed one-minute windows. Past the limit the
 * address is refused until its window ends. No timer: expired entries are swept when the table grows.
 * Every `now` is on the monotonic clock (lib/monotonic.ts): a block lasts its minute whatever is
 * done to the wall clock.
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
    return secondsUntil(entry.resetAt, now);
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
    // Still full (a flood from many addresses): forget addresses that are not blocked first, the
    // oldest first, and blocked ones only if that is not enough, rather than grow without bound.
    for (const onlyUnblocked of [true, false]) {
      for (const [address, entry] of this.#failures) {
        if (this.#failures.size < this.#maxAddresses) return;
        if (!onlyUnblocked || entry.count < this.#limit) this.#failures.delete(address);
      }
    }
  }
}

/**
 * The unit that is throttled: an IPv4 address, or the /64 network of an IPv6 address (one host
 * usually holds a whole /64, so counting single IPv6 addresses would let it rotate past the limit).
 */
export function clientKey(address: string): string {
  if (!address.includes(':')) return address; // IPv4, the common case: nothing to rewrite
  if (address.startsWith('::ffff:')) return address.slice('::ffff:'.length); // IPv4-mapped IPv6
  const bare = address.replace(/%.*$/, '');
  const [head = '', tail] = bare.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups =
    tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((g) => g.toLowerCase().replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
