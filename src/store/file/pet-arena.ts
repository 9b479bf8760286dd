import { PET_STATUSES, type PetStatus } from '../../pet/contract.js';

const CHUNK_BYTES = 1 << 20;
const INITIAL_SLOTS = 1024;
const COMMA = 0x2c;

/** A status as a small number: 0 for none, then PET_STATUSES' order. */
export type StatusCode = 0 | 1 | 2 | 3;
export const statusCode = (status: PetStatus | undefined): StatusCode => (status === undefined ? 0 : (PET_STATUSES.indexOf(status) + 1) as StatusCode);

/**
 * The pets in memory, off the JavaScript heap: the exact JSON text of every pet in large Buffers,
 * appended and never rewritten, and per pet a few numbers in typed arrays (id, where its text is,
 * status). Ids only ever grow, so every list is sorted and a page is a binary search plus a copy of
 * byte ranges. A million pets are then a few dozen objects for the garbage collector, not millions.
 */
export class PetArena {
  readonly #chunks: Buffer[] = [];
  /** The chunk copied texts go to, and how much of it is used; -1: none yet. */
  #copyChunk = -1;
  #used = 0;
  /** The chunk that is the buffer most recently kept in place (a data file's), or -1. */
  #inPlaceChunk = -1;
  #count = 0;
  #ids: Float64Array;
  #chunkOf: Uint32Array;
  #offsets: Uint32Array;
  #lengths: Uint16Array;
  /** Per status code 1–3: the positions of the pets with that status, ascending, and how many. */
  readonly #byStatus: Array<{ positions: Uint32Array; count: number }>;

  constructor(capacity = INITIAL_SLOTS) {
    const slots = Math.max(INITIAL_SLOTS, capacity);
    this.#ids = new Float64Array(slots);
    this.#chunkOf = new Uint32Array(slots);
    this.#offsets = new Uint32Array(slots);
    this.#lengths = new Uint16Array(slots);
    this.#byStatus = [0, 1, 2].map(() => ({ positions: new Uint32Array(slots), count: 0 }));
  }

  get size(): number {
    return this.#count;
  }

  get lastId(): number {
    return this.#count === 0 ? 0 : (this.#ids[this.#count - 1] as number);
  }

  /**
   * Adds a pet whose JSON text is `bytes[start..end)`, copied in, followed by the byte `closing` if
   * given (a keyed line's text without its record: no Buffer is made to join them). Its id must be
   * above every id so far.
   */
  append(id: number, status: StatusCode, bytes: Uint8Array, start = 0, end = bytes.length, closing?: number): void {
    const length = this.#check(id, start, end) + (closing === undefined ? 0 : 1);
    if (this.#copyChunk === -1 || this.#used + length > (this.#chunks[this.#copyChunk] as Buffer).length) {
      // A pet never spans two chunks: at most one pet's worth is left unused at a chunk's end.
      this.#copyChunk = this.#chunks.push(Buffer.allocUnsafeSlow(Math.max(CHUNK_BYTES, length))) - 1;
      this.#used = 0;
    }
    const chunk = this.#copyChunk;
    const target = this.#chunks[chunk] as Buffer;
    target.set(bytes.subarray(start, end), this.#used);
    if (closing !== undefined) target[this.#used + length - 1] = closing;
    this.#add(id, status, chunk, this.#used, length);
    this.#used += length;
  }

  /**
   * Adds a pet whose text stays where it is, `buffer[start..end)`, which must never change: a data
   * file read at start, so that loading copies no pet and leaves no file-sized garbage behind.
   */
  appendInPlace(id: number, status: StatusCode, buffer: Buffer, start: number, end: number): void {
    const length = this.#check(id, start, end);
    // Copied and kept pets may alternate (keyed lines are copied): each keeps its own chunk.
    if (this.#chunks[this.#inPlaceChunk] !== buffer) this.#inPlaceChunk = this.#chunks.push(buffer) - 1;
    this.#add(id, status, this.#inPlaceChunk, start, length);
  }

  #check(id: number, start: number, end: number): number {
    if (id <= this.lastId) throw new RangeError(`pet id ${id} is not above the last id ${this.lastId}`);
    const length = end - start;
    if (length > 0xffff) throw new RangeError(`a pet's text of ${length} bytes is longer than a pet can be`);
    return length;
  }

  #add(id: number, status: StatusCode, chunk: number, offset: number, length: number): void {
    if (this.#count === this.#ids.length) this.#grow();
    const at = this.#count++;
    this.#ids[at] = id;
    this.#chunkOf[at] = chunk;
    this.#offsets[at] = offset;
    this.#lengths[at] = length;
    if (status !== 0) {
      const list = this.#byStatus[status - 1] as { positions: Uint32Array; count: number };
      if (list.count === list.positions.length) list.positions = grown(list.positions);
      list.positions[list.count++] = at;
    }
  }

  /** The position of the pet with this id, or -1. */
  positionOf(id: number): number {
    const ids = this.#ids;
    const count = this.#count;
    if (count === 0) return -1;
    // Ids are dense but for the ones failed creates used up: try the id's own place first.
    const guess = id - (ids[0] as number);
    if (guess >= 0 && guess < count && ids[guess] === id) return guess;
    const at = firstAbove(ids, count, id - 1);
    return at < count && ids[at] === id ? at : -1;
  }

  idAt(position: number): number {
    return this.#ids[position] as number;
  }

  /** The pet's JSON text, as a view of the arena (no copy). */
  textAt(position: number): Buffer {
    const offset = this.#offsets[position] as number;
    return (this.#chunks[this.#chunkOf[position] as number] as Buffer).subarray(offset, offset + (this.#lengths[position] as number));
  }

  /** Positions of the page after id `after`, at most `limit`, with `status` if given; and whether more follow. */
  page(after: number, limit: number, status: StatusCode): { positions: number[]; more: boolean } {
    const positions: number[] = [];
    if (status === 0) {
      const start = firstAbove(this.#ids, this.#count, after);
      const end = Math.min(start + limit, this.#count);
      for (let p = start; p < end; p++) positions.push(p);
      return { positions, more: end < this.#count };
    }
    const list = this.#byStatus[status - 1] as { positions: Uint32Array; count: number };
    const start = firstAboveIn(list.positions, list.count, this.#ids, after);
    const end = Math.min(start + limit, list.count);
    for (let i = start; i < end; i++) positions.push(list.positions[i] as number);
    return { positions, more: end < list.count };
  }

  /** `[text,text,…]` of these positions, built in one Buffer. */
  jsonArray(positions: readonly number[]): Buffer {
    let size = 2 + Math.max(0, positions.length - 1);
    for (const p of positions) size += this.#lengths[p] as number;
    const out = Buffer.allocUnsafe(size);
    out[0] = 0x5b; // [
    let at = 1;
    for (let i = 0; i < positions.length; i++) {
      const p = positions[i] as number;
      if (i > 0) out[at++] = COMMA;
      // Byte by byte: a pet is a few dozen bytes, for which a view and a copy call per pet cost more.
      const chunk = this.#chunks[this.#chunkOf[p] as number] as Buffer;
      const from = this.#offsets[p] as number;
      const end = from + (this.#lengths[p] as number);
      for (let k = from; k < end; k++) out[at++] = chunk[k] as number;
    }
    out[at] = 0x5d; // ]
    return out;
  }

  #grow(): void {
    this.#ids = grown(this.#ids);
    this.#chunkOf = grown(this.#chunkOf);
    this.#offsets = grown(this.#offsets);
    this.#lengths = grown(this.#lengths);
  }
}

function grown<T extends Float64Array | Uint32Array | Uint16Array>(array: T): T {
  const bigger = new (array.constructor as new (length: number) => T)(array.length * 2);
  bigger.set(array);
  return bigger;
}

/** Index of the first of `count` ascending ids above `id`. */
function firstAbove(ids: Float64Array, count: number, id: number): number {
  if (count === 0 || (ids[0] as number) > id) return 0; // the first page: no search
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((ids[mid] as number) <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}

/** The same over a list of positions into `ids`. */
function firstAboveIn(positions: Uint32Array, count: number, ids: Float64Array, id: number): number {
  if (count === 0 || (ids[positions[0] as number] as number) > id) return 0;
  let low = 0;
  let high = count;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((ids[positions[mid] as number] as number) <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}
