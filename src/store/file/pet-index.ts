import type { PetStatus } from '../../pet/contract.js';
import { petFromJson, petJson, type Pet } from '../../pet/pet.js';
import { PetArena, statusCode } from './pet-arena.js';
import type { ListPage, ListQuery, ListText } from '../store.js';

/**
 * The pets in memory, ascending by id, with one list per status, kept in a PetArena as their exact
 * JSON text. Reads hand out either that text (for the HTTP answers) or plain Pet objects made from it
 * on demand (for embedders). A cursor page is a binary search plus a copy: O(log n + limit).
 */
export class PetIndex {
  readonly #arena: PetArena;

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

  /**
   * Adds a pet whose exact JSON text (`petJson`) is `bytes[start..end)`, or that followed by the byte
   * `closing`; its id must be above the last.
   */
  appendText(id: number, status: PetStatus | undefined, bytes: Uint8Array, start = 0, end = bytes.length, closing?: number): void {
    this.#arena.append(id, statusCode(status), bytes, start, end, closing);
  }

  /** As appendText, keeping the text where it is in `buffer`, which must never change (a data file read at start). */
  appendInPlace(id: number, status: PetStatus | undefined, buffer: Buffer, start: number, end: number): void {
    this.#arena.appendInPlace(id, statusCode(status), buffer, start, end);
  }

  append(pet: Pet): void {
    this.appendText(pet.id, pet.status, Buffer.from(petJson(pet)));
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

  /** The page's JSON text as bytes, built in one Buffer: the HTTP layer sends it as it is. */
  listText(query: ListQuery): ListText {
    const { positions, more } = this.#page(query);
    const last = positions.at(-1);
    return { json: this.#arena.jsonArray(positions), lastId: last === undefined ? undefined : this.#arena.idAt(last), more };
  }

  /** The id and text of each of the first `count` pets, in id order (the text is a view: copy it before the arena changes). */
  *texts(count: number): Generator<[id: number, text: Buffer]> {
    for (let p = 0; p < count; p++) yield [this.#arena.idAt(p), this.#arena.textAt(p)];
  }

  #page(query: ListQuery): { positions: number[]; more: boolean } {
    return this.#arena.page(query.after, query.limit, statusCode(query.status));
  }
}
