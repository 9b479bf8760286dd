import type { KeyRecordDigest, Keyring } from './keyring.js';

// How often the shared keys are read again: a key revoked on one instance stops working on every
// instance within this time plus one query.
const POLL_INTERVAL_MS = 1000;

/** Reads the keys kept elsewhere (the database). */
export type KeySource = () => Promise<readonly KeyRecordDigest[]>;

/**
 * Keeps a Keyring's shared keys in step with a KeySource, reading it every second. When a read
 * fails the last keys read stay in force (a revoke cannot happen while the source is away either),
 * and the failure is reported once, not every second.
 */
export class KeyPoller {
  readonly #keyring: Keyring;
  readonly #read: KeySource;
  readonly #onError: (error: unknown) => void;
  #timer: NodeJS.Timeout | undefined;
  #failing = false;
  #stopped = false;
  /** The keys of the last read handed to the keyring, as text. */
  #lastRead = '';

  private constructor(keyring: Keyring, read: KeySource, onError: (error: unknown) => void) {
    this.#keyring = keyring;
    this.#read = read;
    this.#onError = onError;
  }

  /** Reads the keys once (a failure is thrown: no server starts without knowing its keys), then every second. */
  static async start(keyring: Keyring, read: KeySource, onError: (error: unknown) => void): Promise<KeyPoller> {
    const poller = new KeyPoller(keyring, read, onError);
    const keys = await read();
    keyring.setSharedKeys(keys);
    poller.#lastRead = asText(keys);
    poller.#schedule();
    return poller;
  }

  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
  }

  #schedule(): void {
    if (this.#stopped) return;
    // Unref'd: the poller alone never keeps the process alive.
    this.#timer = setTimeout(() => void this.#poll(), POLL_INTERVAL_MS).unref();
  }

  async #poll(): Promise<void> {
    try {
      const keys = await this.#read();
      if (this.#stopped) return;
      // Unchanged keys are not handed on: each change makes the keyring a new generation, which ends
      // every connection's remembered key (http/access/remembered-key.ts), and that once a second for nothing.
      const text = asText(keys);
      if (text !== this.#lastRead) this.#keyring.setSharedKeys(keys);
      this.#lastRead = text;
      this.#failing = false;
    } catch (error) {
      if (!this.#failing) this.#onError(error);
      this.#failing = true;
    }
    this.#schedule();
  }
}

function asText(keys: readonly KeyRecordDigest[]): string {
  return JSON.stringify(keys, (_name, value: unknown) => (typeof value === 'bigint' ? String(value) : value));
}
