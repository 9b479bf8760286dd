import type { LogFields } from '../lib/logger.js';
import { petJson } from '../pet/codec.js';
import type { Pet } from '../pet/pet.js';
import { type PetStore, StoreUnavailableError } from '../store/store.js';
import { checkEndpointUrl, endpointOrigin } from './endpoint-url.js';
import type { Pace } from './pace.js';
import { type Attempt, type AttemptResult, send } from './sender.js';
import { signatureHeader } from './signature.js';
import { type Subscription, signingSecrets } from './subscription-file.js';
import type { Cursors } from './subscription-source.js';

/** Failed attempts in a row before a subscription is marked failing: 1 + 2 + … + 256 s, 4–9 minutes with jitter. */
export const FAILING_AFTER = 10;
const FIRST_RETRY_MS = 1000;
/** Pets read from the store at a time: the only pets a subscription holds in memory. */
const PAGE = 32;

export interface DeliveryOptions {
  timeoutMs: number;
  retryMaxMs: number;
  allowHttp: boolean;
  allowPrivate: boolean;
}

export interface DeliveryEvents {
  /** A subscription started failing (`reason` of its last attempt) or recovered: said once each. */
  failing(fields: LogFields): void;
  recovered(fields: LogFields): void;
  /** The loop failed on something unexpected (a store error other than unavailable): it ends, said once. */
  stopped(error: unknown, fields: LogFields): void;
}

/**
 * One subscription's delivery: its pets in id order, one request at a time, each retried with
 * exponential backoff and jitter until a 2xx; the cursor moves only after it. Woken by new commits,
 * by a change of the subscription (new secret, replay), and by the stop.
 */
export class SubscriptionDelivery {
  readonly counts: Record<AttemptResult, number> = { delivered: 0, failed: 0, timeout: 0, refused: 0 };
  #subscription: Subscription;
  #cursor: number;
  #generation = 0;
  #failing = false;
  #stopped = false;
  #newPets = false;
  #idle = false;
  #wake: (() => void) | undefined;
  readonly #abort = new AbortController();
  readonly #running: Promise<void>;

  constructor(
    subscription: Subscription,
    cursor: number,
    private readonly store: PetStore,
    private readonly cursors: Cursors,
    private readonly options: DeliveryOptions,
    private readonly events: DeliveryEvents,
    private readonly pace: Pace,
  ) {
    this.#subscription = subscription;
    this.#cursor = cursor;
    this.#applyReplay();
    this.#running = this.#run().catch((error: unknown) =>
      this.events.stopped(error, this.#fields({ after: this.#cursor })),
    );
  }

  get cursor(): number {
    return this.#cursor;
  }

  get failing(): boolean {
    return this.#failing;
  }

  /** The subscription as the file now says: its secrets and statuses from the next attempt on, a new replay at once. */
  update(subscription: Subscription): void {
    this.#subscription = subscription;
    if (this.#applyReplay()) this.#wake?.();
  }

  /** Pets were committed. */
  notify(): void {
    this.#newPets = true;
    if (this.#idle) this.#wake?.();
  }

  /** Ends the attempt in flight at once (its pet is delivered again after a restart) and the loop. */
  stop(): Promise<void> {
    this.#stopped = true;
    this.#abort.abort();
    this.#wake?.();
    return this.#running;
  }

  #applyReplay(): boolean {
    const replay = this.#subscription.replay;
    if (replay === undefined || this.cursors.get(this.#subscription.id)?.replay === replay.token) return false;
    // Back, never forward: pets not yet delivered before `from` are not passed over.
    this.#cursor = Math.min(this.#cursor, replay.from - 1);
    this.#generation++;
    this.cursors.set(this.#subscription.id, { last: this.#cursor, replay: replay.token });
    return true;
  }

  async #run(): Promise<void> {
    while (!this.#stopped) {
      this.#newPets = false;
      const generation = this.#generation;
      const pets = await this.#read();
      if (pets === undefined) continue;
      if (pets.length === 0) {
        if (!this.#newPets) await this.#sleep(Infinity, true);
        continue;
      }
      for (const pet of pets) {
        if (this.#stopped || generation !== this.#generation) break;
        const statuses = this.#subscription.statuses;
        const wanted = statuses === undefined || (pet.status !== undefined && statuses.includes(pet.status));
        if (wanted && !(await this.#deliver(pet, generation))) break;
        this.#cursor = pet.id;
        this.cursors.set(this.#subscription.id, { last: pet.id, replay: this.#subscription.replay?.token });
      }
    }
  }

  /** The next pets after the cursor; undefined while the store cannot be read (tried again in a second). */
  async #read(): Promise<readonly Pet[] | undefined> {
    try {
      return (await this.store.list({ after: this.#cursor, limit: PAGE })).pets;
    } catch (error) {
      if (!(error instanceof StoreUnavailableError)) throw error;
      await this.#sleep(FIRST_RETRY_MS, false);
      return undefined;
    }
  }

  /** Tries `pet` until it is delivered (true), or the stop or a replay ends the tries (false). */
  async #deliver(pet: Pet, generation: number): Promise<boolean> {
    const id = `msg_${this.#subscription.id}_${pet.id}`;
    for (let failures = 0; ; ) {
      const wait = this.pace.delay();
      if (wait > 0) await this.#sleep(wait, false);
      if (this.#stopped || generation !== this.#generation) return false;
      const attempt = await this.#attempt(id, pet);
      if (this.#stopped || generation !== this.#generation) return false;
      this.counts[attempt.result]++;
      if (attempt.result === 'delivered') {
        if (this.#failing) this.events.recovered(this.#fields({ pet: pet.id }));
        this.#failing = false;
        return true;
      }
      failures++;
      if (failures >= FAILING_AFTER && !this.#failing) {
        this.#failing = true;
        this.events.failing(
          this.#fields({ pet: pet.id, attempts: failures, result: attempt.result, reason: attempt.reason }),
        );
      }
      await this.#sleep(backoffMs(failures, this.options.retryMaxMs), false);
      if (this.#stopped || generation !== this.#generation) return false;
    }
  }

  #attempt(id: string, pet: Pet): Promise<Attempt> {
    let url: URL;
    try {
      url = checkEndpointUrl(this.#subscription.url, this.options.allowHttp);
    } catch (error) {
      if (!(error instanceof TypeError)) throw error;
      return Promise.resolve({ result: 'refused', reason: error.message });
    }
    const timestamp = Math.floor(Date.now() / 1000);
    const sent = new Date(timestamp * 1000).toISOString();
    const body = `{"type":"pet.created","timestamp":"${sent}","data":${petJson(pet)}}`;
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(signingSecrets(this.#subscription, Date.now()), id, timestamp, body),
    };
    return send(url, headers, body, {
      timeoutMs: this.options.timeoutMs,
      allowPrivate: this.options.allowPrivate,
      signal: this.#abort.signal,
    });
  }

  /** Waits `ms`, or less when woken: by the stop or a replay always, by new pets only when `forPets`. */
  #sleep(ms: number, forPets: boolean): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        this.#wake = undefined;
        this.#idle = false;
        resolve();
      };
      const timer = ms === Infinity ? undefined : setTimeout(done, ms);
      this.#wake = done;
      this.#idle = forPets;
      if (this.#stopped) done();
    });
  }

  /** What a log line says of this subscription: never its secrets, nor its URL's path (it may hold a token). */
  #fields(more: LogFields): LogFields {
    return { subscription: this.#subscription.id, endpoint: endpointOrigin(this.#subscription.url), ...more };
  }
}

/** 1, 2, 4 … s, at most `maxMs`, each at 50–100 % (jitter) so receivers back from an outage are not hit in step. */
function backoffMs(failures: number, maxMs: number): number {
  return Math.min(maxMs, FIRST_RETRY_MS * 2 ** Math.min(failures - 1, 30)) * (0.5 + Math.random() / 2);
}
