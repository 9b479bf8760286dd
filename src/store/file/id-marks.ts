/**
 * The store's two id marks (docs/design.md, "Words used here"). The store moves them as it hands ids
 * out and commits their lines; the compaction tells it when a new journal begins, the one moment the
 * records account for every id handed out without a line of their own.
 */
export class IdMarks {
  #handedOut: number;
  #recorded: number;

  constructor(handedOut: number, recorded: number) {
    this.#handedOut = handedOut;
    this.#recorded = recorded;
  }

  /** The highest id handed out. */
  get handedOut(): number {
    return this.#handedOut;
  }

  /**
   * The highest id the records account for (format 4: each line's id follows the one before); below
   * `handedOut` after ids were handed out without a line, which the next commit writes a skip line for.
   */
  get recorded(): number {
    return this.#recorded;
  }

  /** Hands out the next id. */
  handOut(): number {
    return ++this.#handedOut;
  }

  /** The lines of every id up to `id` are in the journal. */
  recordedUpTo(id: number): void {
    this.#recorded = id;
  }

  /** A new journal begins, after a snapshot whose lastId is `handedOut`: that snapshot accounts for every id. */
  newJournal(): void {
    this.#recorded = this.#handedOut;
  }
}
