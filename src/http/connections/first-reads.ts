import type { Server, Socket } from 'node:net';
import { monotonicMs } from '../../lib/monotonic.js';

/** An address that flooded starts the first read of one of its connections in this many turns at most. */
const TURNS_PER_READ = 64;
/** How long an address is remembered as flooding after the last sign of it. */
const MEMORY_MS = 10_000;

/** An address that flooded: until when it is remembered, when it last started a first read, what waits (to start). */
interface Flooder {
  until: number;
  readAt: number;
  waiting: Map<Socket, () => void>;
}

/**
 * The first read of each new connection, put off for a client address that floods. Node accepts one
 * connection per turn of the event loop, and a turn lasts as long as the reads in it: connections that
 * each bring hundreds of pipelined requests, read as soon as accepted and ended for it, made every turn
 * long, and a client that reopens each one at once kept the listen backlog full of them; another
 * client's connection waited there, unaccepted, for seconds. So the server accepts connections paused
 * and reads each at once, except from an address that flooded in the last MEMORY_MS: one of whose
 * connections the server ended for answers not taken (more than 64 unanswered, the send timeout, the
 * unsent bytes), or whose answers stalled with more requests pipelined behind them. That address
 * starts one first read in TURNS_PER_READ turns, oldest first. Its other connections wait, with
 * no request in progress, so at --max-connections they are closable, and the slot limiter closes those
 * of the address holding the most. The flood then holds its own waiting connections instead of the
 * backlog, gives its oldest up for room, and costs the server a turn's accept each; nothing is refused.
 * Over TLS, what waits is the handshake: each flood connection read also left hundreds of parsed
 * requests as garbage, and bursts of them kept the heap large (bench/results.md, "Answers nobody reads").
 */
export class FirstReads {
  readonly #flooders = new Map<string, Flooder>();
  #turn = 0;
  #turnAhead = false;
  #forgetting: NodeJS.Timeout | undefined;

  /** Has `server` accept its connections paused, each read when its address may. */
  serve(server: Server): void {
    // net.Server's documented option, which http.Server does not pass on: net reads it from the instance.
    (server as Server & { pauseOnConnect: boolean }).pauseOnConnect = true;
    server.on('connection', (socket: Socket) => this.#add(socket, () => socket.resume()));
  }

  /**
   * The same for a TLS server, whose own 'connection' listeners (the handshake) are what is put off:
   * pausing its TLS socket once secured would be too late, as the requests sent with the handshake's
   * last message are decrypted and parsed in the same read. Until its turn, what a waiting connection
   * sent (its hello) stays in its buffer, up to the stream's high-water mark.
   */
  serveSecured(server: Server): void {
    const handshakes = server.listeners('connection') as Array<(socket: Socket) => void>;
    server.removeAllListeners('connection');
    server.on('connection', (socket: Socket) =>
      this.#add(socket, () => {
        for (const listener of handshakes) listener.call(server, socket);
      }),
    );
  }

  /** The client of `socket` leaves its answers untaken (send-watch.ts says when): its address floods. */
  flooding(socket: Socket): void {
    const address = socket.remoteAddress ?? '';
    const until = monotonicMs() + MEMORY_MS;
    const flooder = this.#flooders.get(address);
    if (flooder === undefined) this.#flooders.set(address, { until, readAt: this.#turn, waiting: new Map() });
    else flooder.until = until;
    this.#nextTurnAhead();
    this.#forgetLater();
  }

  /**
   * Forgets the addresses whose time is up even when no turn comes: otherwise each address that ever
   * flooded and never came back would be kept, and its next connection put off.
   */
  #forgetLater(): void {
    this.#forgetting ??= setTimeout(() => {
      this.#forgetting = undefined;
      this.#forget(monotonicMs());
      if (this.#flooders.size > 0) this.#forgetLater();
    }, MEMORY_MS).unref();
  }

  #forget(now: number): void {
    for (const [address, flooder] of this.#flooders) {
      // Forgotten once its time is up: what still waits is read, in its turns, as anyone's would be.
      if (now >= flooder.until && flooder.waiting.size === 0) this.#flooders.delete(address);
    }
  }

  /** Has `start` read `socket` now, or once its address's turn comes. */
  #add(socket: Socket, start: () => void): void {
    // Closed by the slot limiter for want of room.
    if (socket.destroyed) return;
    const flooder = this.#flooders.get(socket.remoteAddress ?? '');
    if (flooder === undefined || (flooder.waiting.size === 0 && this.#turn - flooder.readAt >= TURNS_PER_READ)) {
      if (flooder !== undefined) flooder.readAt = this.#turn;
      start();
      return;
    }
    const { waiting } = flooder;
    waiting.set(socket, start);
    socket.once('close', () => waiting.delete(socket));
    this.#nextTurnAhead();
  }

  #nextTurnAhead(): void {
    if (this.#turnAhead) return;
    this.#turnAhead = true;
    setImmediate(this.#nextTurn);
  }

  /** Counts a turn; each address whose turn it is starts its oldest waiting connection. */
  readonly #nextTurn = (): void => {
    this.#turn++;
    for (const flooder of this.#flooders.values()) {
      if (this.#turn - flooder.readAt >= TURNS_PER_READ) {
        for (const [socket, start] of flooder.waiting) {
          flooder.waiting.delete(socket);
          if (socket.destroyed) continue; // closed for room, its 'close' still to come
          start();
          flooder.readAt = this.#turn;
          break;
        }
      }
    }
    this.#forget(monotonicMs());
    this.#turnAhead = false;
    for (const flooder of this.#flooders.values()) {
      if (flooder.waiting.size > 0) {
        this.#nextTurnAhead();
        break;
      }
    }
  };
}
