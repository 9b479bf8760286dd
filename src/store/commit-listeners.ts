import type { CommitListener } from './store.js';

/**
 * The listeners of a store's commits (PetStore.watchCommits). A store tells it every id it learns was
 * committed, from its own commits or from elsewhere, and each listener hears only of ids that grew.
 */
export class CommitListeners {
  readonly #listeners = new Set<CommitListener>();
  #last = 0;

  get size(): number {
    return this.#listeners.size;
  }

  add(listener: CommitListener): () => void {
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  committed(lastId: number): void {
    if (!(lastId > this.#last)) return;
    this.#last = lastId;
    for (const listener of this.#listeners) listener(lastId);
  }
}
