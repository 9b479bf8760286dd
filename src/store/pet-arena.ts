import { PET_STATUSES, type PetStatus } from '../pet/contract.js';

// Copied texts go to chunks of 64 KiB, then twice as large each time up to 1 MiB: a store that
// receives few creates does not hold a mostly empty megabyte.
const FIRST_COPY_CHUNK = 64 * 1024;
const MAX_COPY_CHUNK = 1 << 20;
const INITIAL_SLOTS = 256;
const COMMA = 0x2c;

/** A status as a small number: 0 for none, then 1 on in PET_STATUSES' order. */
export type StatusCode = number;
export const statusCode = (status: PetStatus | undefined): StatusCode =>
  status === undefined ? 0 : PET_STATUSES.indexOf(status) + 1;

/** Ids as distances from the first id: 4 bytes each while they fit in 32 bits, 8 (exact to 2^53) after that. */
type IdOffsets = Uint32Array | Float64Array;
/** Chunk numbers in the narrowest array that holds them. */
type ChunkNumbers = Uint8Array | Uint16Array | Uint32Array;

/**
 * The pets in memory, off the JavaScript heap: the exact stored line of every pet (the file store's
 * line: its JSON text, then its checksum; the PostgreSQL store's copy: the JSON text alone) in large Buffers, appended
 * and never rewritten, and per pet a few numbers in typed arrays (id, where its text is,
 * status): 15 bytes a pet while ids lie within 2^32 of the first and there are at most 256 Buffers.
 * Ids only ever grow, so every list is sorted and a page is a binary search plus a copy of
 * byte ranges. A million pets are then a few dozen objects for the garbage collector, not millions.
 */
export class PetArena {
  readonly #chunks: Buffer[] = [];
  /** Each chunk's memory and where in it the chunk starts, for making views without asking the Buffer. */
  readonly #memory: ArrayBufferLike[] = [];
  readonly #starts: number[] = [];
  /** The chunk copied texts go to, and how much of it is used; -1: none yet. */
  #copyChunk = -1;
  #used = 0;
  #nextCopyBytes = FIRST_COPY_CHUNK;
  /** The chunk that is the buffer most recently kept in place (a data file's), or -1. */
  #inPlaceChunk = -1;
  #count = 0;
  /** The first pet's id: #ids holds every id minus this. */
  #base = 0;
  #ids: IdOffsets;
  #chunkOf: ChunkNumbers;
  #offsets: Uint32Array;
  #lengths: Uint16Array;
  /** Per status code from 1: the positions of the pets with that status, ascending, and how many. */
  readonly #byStatus: Array<{ positions: Uint32Array; count: number }>;

  /** `capacity`: how many pets to make room for at once; untouched room costs address space, not memory. */
  constructor(capacity = INITIAL_SLOTS) {
    const slots = Math.max(INITIAL_SLOTS, capacity);
    this.#ids = new Uint32Array(slots);
    this.#chunkOf = new Uint8Array(slots);
    this.#offsets = new Uint32Array(slots);
    this.#lengths = new Uint16Array(slots);
    this.#byStatus = PET_STATUSES.map(() => ({ positions: new Uint32Array(slots), count: 0 }));
  }

  get size(): number {
    return this.#count;
  }

  /** How many pets have the status of this code, from 1 (those without one are the rest of `size`). */
  countOf(code: StatusCode): number {
    return (this.#byStatus[code - 1] as { count: number }).count;
  }

  get lastId(): number {
    return this.#count === 0 ? 0 : this.#base + (this.#ids[this.#count - 1] as number);
  }

  /**
   * Adds a pet whose line (record-line.ts) is `bytes[start..end)`, copied in whole, its JSON text
   * `bytes[textStart..textEnd)` within it; its id above every id so far.
   */
  append(
    id: number,
    status: StatusCode,
    bytes: Uint8Array,
    start: number,
    end: number,
    textStart: number,
    textEnd: number,
  ): void {
    const textLength = this.#check(id, textStart, textEnd);
    const length = end - start;
    if (this.#copyChunk === -1 || this.#used + length > (this.#chunks[this.#copyChunk] as Buffer).length) {
      // A pet never spans two chunks: at most one pet's worth is left unused at a chunk's end.
      this.#copyChunk = this.#addChunk(Buffer.allocUnsafeSlow(Math.max(this.#nextCopyBytes, length)));
      this.#nextCopyBytes = Math.min(MAX_COPY_CHUNK, this.#nextCopyBytes * 2);
      this.#used = 0;
    }
    const chunk = this.#copyChunk;
    (this.#chunks[chunk] as Buffer).set(bytes.subarray(start, end), this.#used);
    this.#add(id, status, chunk, this.#used + textStart - start, textLength);
    this.#used += length;
  }

  /**
   * Adds a pet whose text stays where it is, `buffer[start..end)`, inside its line, and which must never change:
   * a data file read at start, so that loading copies no pet and leaves no file-sized garbage behind.
   */
  appendInPlace(id: number, status: StatusCode, buffer: Buffer, start: number, end: number): void {
    const length = this.#check(id, start, end);
    // Copied and kept pets may alternate (keyed lines are copied): each keeps its own chunk.
    if (this.#chunks[this.#inPlaceChunk] !== buffer) this.#inPlaceChunk = this.#addChunk(buffer);
    this.#add(id, status, this.#inPlaceChunk, start, length);
  }

  #check(id: number, start: number, end: number): number {
    if (id <= this.lastId) throw new RangeError(`pet id ${id} is not above the last id ${this.lastId}`);
    const length = end - start;
    if (length > 0xffff) throw new RangeError(`a pet's text of ${length} bytes is longer than a pet can be`);
    return length;
  }

  /** Keeps a chunk and returns its number, widening the chunk numbers when it would not fit. */
  #addChunk(buffer: Buffer): number {
    const chunk = this.#chunks.push(buffer) - 1;
    this.#memory.push(buffer.buffer);
    this.#starts.push(buffer.byteOffset);
    if (chunk === 0x100 && this.#chunkOf instanceof Uint8Array) this.#chunkOf = widened(this.#chunkOf, Uint16Array);
    if (chunk === 0x10000 && this.#chunkOf instanceof Uint16Array) this.#chunkOf = widened(this.#chunkOf, Uint32Array);
    return chunk;
  }

  #add(id: number, status: StatusCode, chunk: number, offset: number, length: number): void {
    if (this.#count === this.#ids.length) this.#grow();
    if (this.#count === 0) this.#base = id;
    const distance = id - this.#base;
    // A Uint32Array would wrap a larger distance silently: from here on ids take 8 bytes.
    if (distance > 0xffffffff && this.#ids instanceof Uint32Array) this.#ids = widened(this.#ids, Float64Array);
    const at = this.#count++;
    this.#ids[at] = distance;
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
    const distance = id - this.#base;
    if (count === 0 || !(distance >= 0)) return -1;
    // Ids are dense but for the ones failed creates used up: try the id's own place first.
    if (distance < count && ids[distance] === distance) return distance;
    const at = firstAbove(ids, count, distance - 1);
    return at < count && ids[at] === distance ? at : -1;
  }

  idAt(position: number): number {
    return this.#base + (this.#ids[position] as number);
  }

  /** The buffer that holds the pet's line (its text and what follows it), and where its text begins. */
  bufferAt(position: number): Buffer {
    return this.#chunks[this.#chunkOf[position] as number] as Buffer;
  }

  textOffsetAt(position: number): number {
    return this.#offsets[position] as number;
  }

  textLengthAt(position: number): number {
    return this.#lengths[position] as number;
  }

  /** The pet's JSON text, as a view of the arena (no copy). */
  textAt(position: number): Buffer {
    const offset = this.#offsets[position] as number;
    return (this.#chunks[this.#chunkOf[position] as number] as Buffer).subarray(
      offset,
      offset + (this.#lengths[position] as number),
    );
  }

  /** Positions of the page after id `after`, at most `limit`, with `status` if given; and whether more follow. */
  page(after: number, limit: number, status: StatusCode): { positions: number[]; more: boolean } {
    const positions: number[] = [];
    if (status === 0) {
      const start = firstAbove(this.#ids, this.#count, after - this.#base);
      const end = Math.min(start + limit, this.#count);
      for (let p = start; p < end; p++) positions.push(p);
      return { positions, more: end < this.#count };
    }
    const list = this.#byStatus[status - 1] as { positions: Uint32Array; count: number };
    const start = firstAboveIn(list.positions, list.count, this.#ids, after - this.#base);
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
      // One native copy per pet, from a view made straight on the chunk's memory: Buffer.copy makes such a view
      // too, but only after checking its arguments and asking the Buffer for its ArrayBuffer, and copying byte by
      // byte in JavaScript cost more still (bench/results.md, "Why the code is shaped this way").
      const chunk = this.#chunkOf[p] as number;
      const length = this.#lengths[p] as number;
      out.set(
        new Uint8Array(
          this.#memory[chunk] as ArrayBufferLike,
          (this.#starts[chunk] as number) + (this.#offsets[p] as number),
          length,
        ),
        at,
      );
      at += length;
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

type Numbers = IdOffsets | ChunkNumbers | Uint16Array;

function grown<T extends Numbers>(array: T): T {
  return widened(array, array.constructor as new (length: number) => T, array.length * 2);
}

/** The same numbers in an array of another type (wider, or as wide and longer). */
function widened<T extends Numbers>(array: Numbers, Type: new (length: number) => T, length = array.length): T {
  const wider = new Type(length);
  wider.set(array);
  return wider;
}

/** Index of the first of `count` ascending ids (distances from the first id) above `id`. */
function firstAbove(ids: IdOffsets, count: number, id: number): number {
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
function firstAboveIn(positions: Uint32Array, count: number, ids: IdOffsets, id: number): number {
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
