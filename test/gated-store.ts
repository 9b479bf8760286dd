/** An asynchronous store in memory whose page reads a test holds and lets go (feed-reads.test.ts, stream-keys.test.ts). */
import type { ListPage, ListQuery, NewPet, Pet } from './package.js';

/** A page read the store has begun and not answered yet: its pets are those stored when it began. */
export interface HeldRead {
  query: ListQuery;
  release(): void;
}

/** A store in memory, telling no commits (the feed learns of the service's creates), whose page reads wait while `gated`. */
export class GatedStore {
  readonly ready = true;
  readonly pets: Pet[] = [];
  readonly held: HeldRead[] = [];
  gated = true;

  list(query: ListQuery): Promise<ListPage> {
    const matching = this.pets.filter(
      (p) => p.id > query.after && (query.status === undefined || p.status === query.status),
    );
    const page = { pets: matching.slice(0, query.limit), more: matching.length > query.limit };
    if (!this.gated) return Promise.resolve(page);
    return new Promise((resolve) => this.held.push({ query, release: () => resolve(page) }));
  }

  get(id: number): Pet | undefined {
    return this.pets.find((p) => p.id === id);
  }

  async create(pet: NewPet): Promise<Pet> {
    const stored: Pet = { ...pet, id: this.pets.length + 1 };
    this.pets.push(stored);
    return stored;
  }

  async close(): Promise<void> {}

  /** Lets every held read go, and the reads from now on too. */
  open(): void {
    this.gated = false;
    for (const read of this.held.splice(0)) read.release();
  }
}
