import { PET_STATUSES, type PetStatus } from '../pet/contract.js';
import { petFromJson } from '../pet/codec.js';
import type { Pet } from '../pet/pet.js';
import { noStatusCounts } from './observer.js';
import { PageMemo } from './page-memo.js';
import { PetArena, statusCode } from './pet-arena.js';
import type { ListPage, ListQuery, ListText, StatusCounts } from './store.js';

/** A stored pet's line as the index holds it; `bytes` is a view of its memory, never to be changed. */
export interface StoredLine {
  id: number;
  bytes: Buffer;
  textStart: number;
  textEnd: number;
}

const EMPTY = Buffer.alloc(0);

/**
 * The pets in memory of the file store and of the PostgreSQL store's copy, ascending by id, with one list per status,
 * kept in a PetArena as their exact
 * JSON text. Reads hand out either that text (for the HTTP answers) or plain Pet objects made from it
 * on demand (for embedders). A cursor page is a binary search plus a copy: O(log n + limit).
 */
export class PetIndex {
  readonly #arena: PetArena;
  readonly #memo = new PageMemo();

  /** `capacity`: how many pets to make room for at once (more are made room for as they come). */
  constructor(capacity?: number) {
    this.#arena = new PetArena(capacity);
  }

  get size(): number {
    return this.#arena.size;
  }

  get lastId(): number {
    return this.#arena.lastId;
  }

  /** The pets per status, from the arena's lists: O(1). */
  countByStatus(): StatusCounts {
    const counts = noStatusCounts();
    counts.none = this.#arena.size;
    for (const status of PET_STATUSES) {
      counts[status] = this.#arena.countOf(statusCode(status));
      counts.none -= counts[status];
    }
    return counts;
  }

  /**
   * Adds a pet whose line (record-line.ts) is `bytes[start..end)`, copied in, with its exact JSON text
   * (`petJson`) at `bytes[textStart..textEnd)`; its id must be above the last.
   */
  appendLine(
    id: number,
    status: PetStatus | undefined,
    bytes: Uint8Array,
    start: number,
    end: number,
    textStart: number,
    textEnd: number,
  ): void {
    this.#arena.append(id, statusCode(status), bytes, start, end, textStart, textEnd);
  }

  /**
   * As appendLine, keeping the line where it is in `buffer`, which must never change (a data file read at start, a page
   * of the PostgreSQL copy's fill).
   */
  appendInPlace(id: number, status: PetStatus | undefined, buffer: Buffer, textStart: number, textEnd: number): void {
    this.#arena.appendInPlace(id, statusCode(status), buffer, textStart, textEnd);
  }

  /**
   * The pet's line (a new StoredLine): what the store keeps after its text is the store's own (record-line.ts reads the
   * file store's).
   */
  lineOf(id: number): StoredLine | undefined {
    const at = this.#arena.positionOf(id);
    if (at === -1) return undefined;
    const textStart = this.#arena.textOffsetAt(at);
    return { id, bytes: this.#arena.bufferAt(at), textStart, textEnd: textStart + this.#arena.textLengthAt(at) };
  }

  get(id: number): Pet | undefined {
    const text = this.getText(id);
    return text === undefined ? undefined : petFromJson(text.toString());
  }

  /** The pet's JSON text as bytes: a view of the arena, which never changes them; read-only for callers too. */
  getText(id: number): Buffer | undefined {
    const at = this.#arena.positionOf(id);
    return at === -1 ? undefined : this.#arena.textAt(at);
  }

  list(query: ListQuery): ListPage {
    const { positions, more } = this.#page(query);
    return { pets: positions.map((p) => petFromJson(this.#arena.textAt(p).toString())), more };
  }

  /**
   * The page's JSON text as bytes, built in one Buffer and kept for the next who asks (page-memo.ts): read-only for
   * callers.
   */
  listText(query: ListQuery): ListText {
    const count = this.#arena.size;
    const kept = this.#memo.get(query, count);
    if (kept !== undefined) return kept;
    const { positions, more } = this.#page(query);
    const last = positions.at(-1);
    const page = {
      json: this.#arena.jsonArray(positions),
      lastId: last === undefined ? undefined : this.#arena.idAt(last),
      more,
    };
    this.#memo.set(query, count, page);
    return page;
  }

  /**
   * The first `count` pets' lines, in id order, each given as one reused StoredLine: the buffer that
   * holds it and where the pet's text lies in it (its line begins just before, its tail follows).
   */
  *lines(count: number): Generator<StoredLine> {
    const line: StoredLine = { id: 0, bytes: EMPTY, textStart: 0, textEnd: 0 };
    for (let p = 0; p < count; p++) {
      line.id = this.#arena.idAt(p);
      line.bytes = this.#arena.bufferAt(p);
      line.textStart = this.#arena.textOffsetAt(p);
      line.textEnd = line.textStart + this.#arena.textLengthAt(p);
      yield line;
    }
  }

  #page(query: ListQuery): { positions: number[]; more: boolean } {
    return this.#arena.page(query.after, query.limit, statusCode(query.status));
  }
}
