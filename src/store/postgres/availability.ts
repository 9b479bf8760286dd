// While the database is away, a write is tried this often, so that readiness comes back by itself.
const PROBE_INTERVAL_MS = 1000;

/**
 * Whether the database can be used, as the last statement that reached it (or failed to) says. Once
 * it is away, `probe` (a write that changes nothing) is tried every PROBE_INTERVAL_MS until it
 * succeeds; `onChange` is told each change, and an unexpected failure of a probe.
 */
export class Availability {
  readonly #onChange: (available: boolean, error?: unknown) => void;
  readonly #probe: () => Promise<unknown>;
  /** Whether a probe's failure is the database being away, already reported when it went. */
  readonly #expected: (error: unknown) => boolean;
  #available = true;
  #timer: NodeJS.Timeout | undefined;
  #closed = false;

  constructor(
    onChange: (available: boolean, error?: unknown) => void,
    probe: () => Promise<unknown>,
    expected: (error: unknown) => boolean,
  ) {
    this.#onChange = onChange;
    this.#probe = probe;
    this.#expected = expected;
  }

  get available(): boolean {
    return this.#available;
  }

  set(available: boolean, error?: unknown): void {
    if (available === this.#available) return;
    this.#available = available;
    this.#onChange(available, error);
    if (!available) this.#schedule();
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#timer !== undefined || this.#closed) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed || this.#available) return;
      this.#probe().then(
        () => this.set(true),
        (error: unknown) => {
          // An unexpected failure is reported like a lost connection: the probe goes on either way.
          if (!this.#expected(error)) this.#onChange(false, error);
          this.#schedule();
        },
      );
    }, PROBE_INTERVAL_MS);
    this.#timer.unref();
  }
}
