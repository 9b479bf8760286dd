import { PET_STATUSES, type PetStatus } from '../pet/contract.js';
import type { Pet } from '../pet/pet.js';
import type { ListPage, ListQuery } from './store.js';

/**
 * The pets in memory, ascending by id, with one list per status. Pets are only ever appended with a
 * larger id, so every list stays sorted and a cursor page is a binary search plus a slice:
 * O(log n + limit), whatever the size of the store.
 */
export class PetIndex {
  #all: Pet[] = [];
  #byStatus = new Map<PetStatus, Pet[]>(PET_STATUSES.map((status) => [status, []]));

  get size(): number {
    return this.#all.length;
  }

  get lastId(): number {
    return this.#all.at(-1)?.id ?? 0;
  }

  /** All pets in id order; the caller must not change the array. */
  get all(): readonly Pet[] {
    return this.#all;
  }

  append(pet: Pet): void {
    if (pet.id <= this.lastId) throw new RangeError(`pet id ${pet.id} is not above the last id ${this.lastId}`);
    this.#all.push(pet);
    if (pet.status !== undefined) this.#byStatus.get(pet.status)?.push(pet);
  }

  get(id: number): Pet | undefined {
    const all = this.#all;
    // Ids are dense (1, 2, 3, …) except where a failed commit took some: try the position the id
    // would have first, one memory access instead of a search that misses the cache at every step.
    const guess = all[id - (all[0]?.id ?? 1)];
    if (guess !== undefined && guess.id === id) return guess;
    const pet = all[firstAbove(all, id - 1)];
    return pet !== undefined && pet.id === id ? pet : undefined;
  }

  list(query: ListQuery): ListPage {
    const pets = query.status === undefined ? this.#all : (this.#byStatus.get(query.status) ?? []);
    const start = firstAbove(pets, query.after);
    const end = start + query.limit;
    return { pets: pets.slice(start, end), more: end < pets.length };
  }
}

/** Index of the first pet whose id is greater than `id` (pets sorted ascending). */
function firstAbove(pets: readonly Pet[], id: number): number {
  if (pets.length === 0 || (pets[0] as Pet).id > id) return 0; // the first page: no search
  let low = 0;
  let high = pets.length;
  while (low < high) {
    const mid = (low + high) >>> 1;
    if ((pets[mid] as Pet).id <= id) low = mid + 1;
    else high = mid;
  }
  return low;
}
