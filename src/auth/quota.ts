import { secondsUntil } from '../lib/monotonic.js';

/** A quota: at most `requests` requests in each window of `seconds`, counted per API key. */
export interface QuotaPolicy {
  readonly requests: number;
  readonly seconds: number;
}

/** The largest quota and window accepted: a billion requests, a year. */
const MAX_REQUESTS = 1_000_000_000;
const MAX_SECONDS = 366 * 24 * 60 * 60;

/** `<requests>/<seconds>`, both plain positive integers (`100/60`); a TypeError saying what is wrong otherwise. */
export function parseQuota(text: string): QuotaPolicy {
  const match = /^([0-9]+)\/([0-9]+)$/.exec(text);
  if (match === null)
    throw new TypeError(`a rate limit is <requests>/<seconds>, such as 100/60, got ${JSON.stringify(text)}`);
  return checkQuota({ requests: Number(match[1]), seconds: Number(match[2]) });
}

/** The policy as it is, once its numbers are whole and in range (an embedder's option, a stored key's). */
export function checkQuota(policy: QuotaPolicy): QuotaPolicy {
  const { requests, seconds } = policy;
  if (!Number.isSafeInteger(requests) || requests < 1 || requests > MAX_REQUESTS)
    throw new TypeError(`a rate limit's requests must be an integer from 1 to ${MAX_REQUESTS}, got ${requests}`);
  if (!Number.isSafeInteger(seconds) || seconds < 1 || seconds > MAX_SECONDS)
    throw new TypeError(`a rate limit's seconds must be an integer from 1 to ${MAX_SECONDS}, got ${seconds}`);
  return { requests, seconds };
}

export const formatQuota = (policy: QuotaPolicy): string => `${policy.requests}/${policy.seconds}`;

/** What counting one request found: a key's window as that request left it. */
export interface QuotaCount {
  /** False when the window's quota was already used: the request is refused and not counted. */
  readonly admitted: boolean;
  /** Requests left in the window after this one. */
  readonly remaining: number;
  /** Whole seconds until the window ends and the quota is whole again, rounded up (at least 1). */
  readonly resetSeconds: number;
}

interface Window {
  start: number;
  end: number;
  count: number;
  admitted: boolean;
  remaining: number;
  resetSeconds: number;
}

// The table is swept of ended windows when it reaches this size, or twice the size the last sweep left.
const MIN_SWEEP = 1024;

/**
 * Counts requests per API key in fixed windows: a key's window starts with its first request and
 * lasts the policy's seconds; within it at most `requests` are admitted. A fixed window is the one
 * whose state the RateLimit fields state exactly: what is left, and when all of it comes back.
 *
 * O(1) per request; no timer. Memory: one small entry per key with a window that has not ended, as
 * only accepted keys are counted; ended windows (a key revoked or idle) are swept when the table
 * doubles, so it holds at most about twice the keys used within one window.
 */
export class QuotaCounter {
  readonly #windows = new Map<string, Window>();
  #sweepAt = MIN_SWEEP;

  /**
   * Counts one request of the key `key` (its identity) under `policy` at `now` (ms, on the monotonic clock:
   * lib/monotonic.ts). The answer is
   * the key's own window, updated in place rather than a new object per request: read it before the
   * next call.
   */
  take(key: string, policy: QuotaPolicy, now: number): QuotaCount {
    let window = this.#windows.get(key);
    if (window === undefined) {
      if (this.#windows.size >= this.#sweepAt) this.#sweep(now);
      window = { start: now, end: now, count: 0, admitted: false, remaining: 0, resetSeconds: 0 };
      this.#windows.set(key, window);
    }
    // An ended window gives way to a new one. The server counts on the monotonic clock, which never
    // goes back; a `now` before the window's start still starts a new window rather than block a key.
    if (now >= window.end || now < window.start) {
      window.start = now;
      window.end = now + policy.seconds * 1000;
      window.count = 0;
    }
    window.admitted = window.count < policy.requests;
    if (window.admitted) window.count++;
    window.remaining = policy.requests - window.count;
    window.resetSeconds = secondsUntil(window.end, now);
    return window;
  }

  #sweep(now: number): void {
    for (const [key, window] of this.#windows) if (now >= window.end || now < window.start) this.#windows.delete(key);
    this.#sweepAt = Math.max(MIN_SWEEP, 2 * this.#windows.size);
  }
}
