import type { IncomingMessage, ServerResponse } from 'node:http';
import type { PetStatus } from '../../pet/contract.js';
import { petJson } from '../../pet/codec.js';
import type { Pet } from '../../pet/pet.js';
import { parseInt64, ValidationError } from '../../pet/validate.js';
import type { Feed, Watcher } from './feed.js';
import { stoppingError, type HttpError } from '../http-error.js';
import { StoreUnavailableError, type ListPage } from '../../store/store.js';

/** Pets read at a time while a stream catches up. */
export const STREAM_PAGE = 100;
/** How long a client waits before it reconnects (`retry:`), in milliseconds. */
const RETRY_MS = 1000;
/** Heartbeat intervals a stream may wait for its client to take a byte of what it was sent. */
const STALL_TICKS = 2;
/**
 * Media types are case-insensitive (RFC 9110 §8.3.1); a test that allocates nothing for the many requests without it.
 */
const EVENT_STREAM = /text\/event-stream/i;

/** A GET whose Accept names `text/event-stream` (with a q above 0): the stream rather than a page. */
export function wantsEventStream(req: IncomingMessage): boolean {
  const accept = req.headers.accept;
  if (accept === undefined || req.method !== 'GET' || !EVENT_STREAM.test(accept)) return false;
  return accept.split(',').some((range) => {
    const [type, ...parameters] = range.split(';');
    if (type?.trim().toLowerCase() !== 'text/event-stream') return false;
    return !parameters.some((p) => /^\s*q\s*=\s*0(?:\.0{0,3})?\s*$/i.test(p));
  });
}

/** The id after which a stream resumes: Last-Event-ID when sent (a decimal id, else 400), else `after`. */
export function resumeAfter(req: IncomingMessage, after: number): number {
  const raw = req.headers['last-event-id'];
  if (raw === undefined) return after;
  // Sent twice, Node joins the values with ", ": no decimal id, and a 400.
  const id = parseInt64(String(raw), 'header Last-Event-ID');
  if (id < 0n) throw new ValidationError('header Last-Event-ID must be a pet id (not negative)');
  return id > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(id);
}

/** The bytes of one pet's event: its id, the type `pet`, and its JSON exactly as the API returns it. */
function eventText(pets: readonly Pet[]): string {
  let text = '';
  for (const pet of pets) text += `id: ${pet.id}\nevent: pet\ndata: ${petJson(pet)}\n\n`;
  return text;
}

/**
 * One `text/event-stream` answer of listPets: the pets after its cursor that match its status, first
 * those stored, then each as it is committed, one event per pet, as long as the client stays.
 *
 * It reads from the store only as the client takes what it was sent: once the socket holds more than
 * its high-water mark unsent, it reads on only after 'drain', so a slow client costs the server that
 * much and one page, never a backlog of its own (the store is the log it reads from). A client that
 * takes not one of the chunks it was sent for STALL_TICKS heartbeat intervals is cut off; one that is
 * slow but reading is not. It resumes from the last event it received in full (Last-Event-ID).
 * Heartbeat comments keep proxies from closing a quiet stream.
 */
export class EventStream implements Watcher {
  readonly #feed: Feed;
  readonly #res: ServerResponse;
  readonly #status: PetStatus | undefined;
  #cursor: number;
  #checked: number;
  /** Whether the stored pets after the cursor have all been read once: then only commits wake it. */
  #caughtUp = false;
  #started = false;
  #pumping = false;
  #draining = false;
  #wrote = false;
  #stalledTicks = 0;
  /** Chunks the socket has handed to the kernel, and how many had been at the last heartbeat: the client's progress. */
  #flushed = 0;
  #flushedAtTick = 0;
  readonly #onFlushed = (): void => {
    this.#flushed++;
  };
  #ended = false;
  /** Why it was ended before it began (its key revoked); undefined: the stop. */
  #endReason: HttpError | undefined;
  #lifetime: NodeJS.Timeout | undefined;

  /**
   * Held by `feed` at once for the API key `keyId` (a 429 or 503 beyond its limits), so that a stream being opened
   * counts too.
   */
  constructor(
    feed: Feed,
    res: ServerResponse,
    status: PetStatus | undefined,
    after: number,
    keyId: string | undefined,
  ) {
    this.#feed = feed;
    this.#res = res;
    this.#status = status;
    this.#cursor = after;
    this.#checked = after;
    feed.hold(this, keyId);
    res.once('close', () => this.#end());
  }

  get checked(): number {
    return this.#checked;
  }

  /**
   * The first page, read before the answer began (a 503 then is still an ordinary answer). A stream
   * ended while it was read (the service stops, or its client went) begins no answer: the stop's 503.
   */
  first(): Promise<ListPage> {
    return this.#read().then(
      (page) => {
        if (this.#ended) throw this.#endReason ?? stoppingError();
        return page;
      },
      (error: unknown) => {
        this.#end();
        throw error;
      },
    );
  }

  /** Once the head is sent: `retry:`, the first page's events, then on by itself until its lifetime is over. */
  start(page: ListPage, at: number): void {
    this.#started = true;
    // Ended as at a stop: its client comes back with Last-Event-ID after `retry:`, and nothing holds a place for ever.
    this.#lifetime = setTimeout(() => this.close(), this.#feed.streamLifetimeMs);
    this.#lifetime.unref();
    this.#write(`retry: ${RETRY_MS}\n\n`);
    this.#took(page, at);
    void this.#pump();
  }

  wake(): void {
    void this.#pump();
  }

  /**
   * A heartbeat when nothing else was sent since the last; a client that took nothing for too long is
   * cut off. A full buffer alone is not a stall: a slow client catching up keeps it full while it
   * reads, and what tells them apart is whether any chunk reached the kernel since the last tick.
   */
  tick(): void {
    if (!this.#started || this.#ended) return;
    const moved = this.#flushed !== this.#flushedAtTick;
    this.#flushedAtTick = this.#flushed;
    if (this.#res.writableNeedDrain && !moved) {
      if (++this.#stalledTicks >= STALL_TICKS) {
        this.#feed.logger.info(
          'event stream ended: its client took none of what it was sent for two heartbeat intervals',
          { after: this.#cursor },
        );
        this.#res.destroy();
      }
      return;
    }
    this.#stalledTicks = 0;
    if (!this.#wrote) this.#write(': heartbeat\n\n');
    this.#wrote = false;
  }

  /**
   * The service stops, its lifetime is over, or its key was revoked (`reason`): the stream ends
   * cleanly, and the client reconnects elsewhere or later (with a revoked key, to a 401). One whose
   * client has not taken all it was sent is cut instead: its end would wait behind bytes that may
   * never leave, and hold up the stop. One not begun yet is only released (`first` answers the 503,
   * or `reason`).
   */
  close(reason?: HttpError): void {
    if (this.#ended) return;
    this.#endReason = reason;
    if (!this.#end() || !this.#started) return;
    if (this.#res.writableLength > 0) this.#res.destroy();
    else this.#res.end();
  }

  async #pump(): Promise<void> {
    if (this.#pumping || !this.#started || this.#ended) return;
    this.#pumping = true;
    try {
      while (!this.#ended && !this.#res.writableNeedDrain && (!this.#caughtUp || this.#feed.latest > this.#checked)) {
        const at = this.#feed.latest;
        this.#took(await this.#read(), at);
      }
      if (!this.#ended && this.#res.writableNeedDrain && !this.#draining) {
        this.#draining = true;
        this.#res.once('drain', () => {
          this.#draining = false;
          this.wake();
        });
      }
    } catch (error) {
      if (error instanceof StoreUnavailableError) {
        // The database is away: the stream stays open (heartbeats go on) and reads again later.
        setTimeout(() => this.wake(), RETRY_MS).unref();
      } else if (this.#end()) {
        this.#feed.logger.error('event stream failed', error);
        this.#res.end();
      }
    } finally {
      this.#pumping = false;
    }
  }

  #read(): Promise<ListPage> {
    return this.#feed.pets({ after: this.#cursor, limit: STREAM_PAGE, status: this.#status });
  }

  /** Sends `page`'s events; `at` is the latest commit known when it was read. */
  #took(page: ListPage, at: number): void {
    if (this.#ended) return;
    const last = page.pets.at(-1);
    if (last !== undefined) {
      this.#write(eventText(page.pets));
      this.#cursor = last.id;
    }
    if (page.more) {
      this.#checked = this.#cursor;
    } else {
      this.#caughtUp = true;
      this.#checked = Math.max(this.#cursor, at);
    }
  }

  #write(text: string): void {
    this.#wrote = true;
    this.#res.write(text, this.#onFlushed);
  }

  #end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    clearTimeout(this.#lifetime);
    this.#feed.release(this);
    return true;
  }
}
