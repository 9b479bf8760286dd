import type { ListQuery, ListText } from './store.js';

/** At most this many pages are kept, and at most this many bytes of their text: the oldest go first. */
export const MEMO_PAGES = 256;
export const MEMO_BYTES = 1024 * 1024;

interface Kept {
  page: ListText;
  /** How many pets the index held when the page was made: a page with no more after it is good while that holds. */
  count: number;
}

/**
 * Pages of the list already built, so that a page asked for again (the first page a client polls,
 * the pages a crawl walks) is not searched for and copied together again.
 *
 * Exact for the same reason the list's ETag is (http/pipeline/conditional.ts): pets never change and become
 * readable in id order, so a page with more pets after it never changes, and one without changes
 * only when a pet is added, which the count held with it tells. Bounded in pages and bytes; a page
 * goes in only once made, so a client asking for ever new pages costs a lookup and a delete a page.
 */
export class PageMemo {
  readonly #pages = new Map<string, Kept>();
  #bytes = 0;

  /** The page kept for `query`, if still good with `count` pets in the index. */
  get(query: ListQuery, count: number): ListText | undefined {
    const kept = this.#pages.get(keyOf(query));
    if (kept === undefined) return undefined;
    return kept.page.more || kept.count === count ? kept.page : undefined;
  }

  /** Keeps `page`, made for `query` with `count` pets in the index, in place of what was kept for it. */
  set(query: ListQuery, count: number, page: ListText): void {
    const key = keyOf(query);
    const old = this.#pages.get(key);
    if (old !== undefined) {
      this.#pages.delete(key);
      this.#bytes -= old.page.json.length;
    }
    if (page.json.length > MEMO_BYTES) return;
    this.#pages.set(key, { page, count });
    this.#bytes += page.json.length;
    for (const [oldest, kept] of this.#pages) {
      if (this.#pages.size <= MEMO_PAGES && this.#bytes <= MEMO_BYTES) break;
      this.#pages.delete(oldest);
      this.#bytes -= kept.page.json.length;
    }
  }

  get size(): number {
    return this.#pages.size;
  }

  get bytes(): number {
    return this.#bytes;
  }
}

function keyOf({ after, limit, status }: ListQuery): string {
  return `${limit} ${after} ${status ?? ''}`;
}
