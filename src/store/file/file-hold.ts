/**
 * Holds on the store's files against compaction: while any is held (a replication round reading the
 * data directory), compaction neither replaces the snapshot nor removes a journal, and a hold is
 * granted only once a replace or removal under way has finished. Appends and journal rotation go on
 * meanwhile: a journal only grows, so what a holder sees of it stays true.
 */
export class FileHold {
  #holders = 0;
  #changing = false;
  /** Who waits for the holders to go (compaction) or for a change to end (holders). */
  #waiting: Array<() => void> = [];

  /** Waits until no change is under way, then holds the files until the returned release is called (once). */
  async hold(): Promise<() => void> {
    while (this.#changing) await this.#next();
    this.#holders++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holders--;
      this.#wake();
    };
  }

  /** Runs `change` once no file is held; holds asked for meanwhile wait for it to end. */
  async change<T>(change: () => Promise<T>): Promise<T> {
    while (this.#changing || this.#holders > 0) await this.#next();
    this.#changing = true;
    try {
      return await change();
    } finally {
      this.#changing = false;
      this.#wake();
    }
  }

  #next(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const resolve of waiting) resolve();
  }
}
