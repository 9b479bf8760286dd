import { monotonicMs } from '../lib/monotonic.js';

/** Marks kept at most; past it every other is dropped, which can only make a lag read shorter. */
const MAX_MARKS = 1024;

/**
 * When pets were committed, as far as this process saw: (last id, monotonic ms) for each commit it
 * was told of, and one mark at start for every pet already there. The store keeps no creation time;
 * this answers "how old is the oldest pet a subscription has not delivered" for the lag metric.
 */
export class CommitTimes {
  #marks: Array<[id: number, ms: number]>;

  constructor(lastIdAtStart: number) {
    this.#marks = lastIdAtStart > 0 ? [[lastIdAtStart, monotonicMs()]] : [];
  }

  get lastId(): number {
    return this.#marks.at(-1)?.[0] ?? 0;
  }

  committed(lastId: number): void {
    if (lastId <= this.lastId) return;
    this.#marks.push([lastId, monotonicMs()]);
    if (this.#marks.length > MAX_MARKS) this.#marks = this.#marks.filter((_, i) => i % 2 === 1);
  }

  /** Seconds since the first pet after `cursor` was committed; 0 when there is none. */
  lagSeconds(cursor: number, now = monotonicMs()): number {
    const mark = this.#marks.find(([id]) => id > cursor);
    return mark === undefined ? 0 : Math.max(0, (now - mark[1]) / 1000);
  }

  /** Forgets marks no subscription needs (all at or before the lowest cursor), keeping the last. */
  prune(lowestCursor: number): void {
    while (this.#marks.length > 1 && (this.#marks[0]?.[0] ?? Infinity) <= lowestCursor) this.#marks.shift();
  }
}
