import type { Socket } from 'node:net';
import { monotonicMs } from '../lib/monotonic.js';

/** The code of the error a connection closed for room is destroyed with. */
export const CLOSED_FOR_ROOM = 'ERR_PETSTORE_CLOSED_FOR_ROOM';

/** A connection closable for less than this is closed for room only when no older one can be. */
const MIN_AGE_MS = 50;

/**
 * Every TCP connection the listener has accepted, from its accept to its close, whatever became of
 * it: read by the HTTP parser, still in its TLS handshake, or handed out of the parser (CONNECT).
 * None of them can end the process, and the stop can close all of them: the server's own account
 * of requests (Connections) and Node's (`closeAllConnections`) both miss a socket handed out.
 *
 * It also keeps the limit of open connections (`max`), in place of Node's `maxConnections`, which
 * refuses the newest connection: then clients that open connections and send nothing, reopening each
 * as it is closed, hold every slot and no one else gets in. Here, at the limit, a connection with no
 * request in progress (none brought yet, or idle since its last answer, or with only part of its next
 * request's headers) is closed to make room (#makeRoom says which); only when none can be is the new
 * one refused. A request is in progress from its headers to the end of its answer (`busy`, `idle`).
 */
export class AcceptedSockets {
  /** Each open socket and when it was accepted, in the order of their accepts. */
  readonly #open = new Map<Socket, number>();
  /**
   * The open sockets with no request in progress, in the order they became so (accepted, or their
   * last answer ended), with the turn of that and their address.
   */
  readonly #unserved = new Map<Socket, { turn: number; since: number; address: string }>();
  /** The same, by the client's address. */
  readonly #unservedFrom = new Map<string, Set<Socket>>();
  /** Turns of the event loop, counted for two turns after each accept (enough to tell which are ripe to close). */
  #turn = 0;
  #turnsToCount = 0;
  /** With TLS: the TCP socket of each peer (`address port`), to find the one under a TLS socket. */
  readonly #byPeer: Map<string, Socket> | undefined;
  /** A TLS socket's TCP socket, once it is known. */
  readonly #under = new WeakMap<Socket, Socket>();
  /** Connections closed to make room for a new one, and new ones refused for want of any. */
  evicted = 0;
  refused = 0;

  constructor(readonly max = Infinity, tls = false) {
    this.#byPeer = tls ? new Map() : undefined;
  }

  add(socket: Socket): void {
    // Node's HTTP server stops listening for a socket's errors when it hands it out of its parser,
    // and an 'error' nobody listens to ends the process: a client's reset must not. There is nothing
    // to do about one: the socket is destroyed with it, and whoever holds it sees it close.
    socket.on('error', ignoreError);
    const address = socket.remoteAddress ?? '';
    if (this.#open.size >= this.max && !this.#makeRoom()) {
      this.refused++;
      socket.destroy();
      return;
    }
    this.#open.set(socket, monotonicMs());
    this.#closable(socket, address);
    const peer = this.#byPeer === undefined ? undefined : `${socket.remoteAddress} ${socket.remotePort}`;
    if (peer !== undefined) this.#byPeer?.set(peer, socket);
    socket.once('close', () => {
      this.#forget(socket);
      if (peer !== undefined && this.#byPeer?.get(peer) === socket) this.#byPeer.delete(peer);
    });
  }

  /** A TLS socket whose handshake is done: requests will name it, not its TCP socket. */
  secured(socket: Socket): void {
    const under = this.#byPeer?.get(`${socket.remoteAddress} ${socket.remotePort}`);
    if (under !== undefined) this.#under.set(socket, under);
  }

  /** `socket` (TCP, or TLS after `secured`) has brought a request's headers: not closed for room until `idle`. */
  busy(socket: Socket): void {
    this.#forgetUnserved(this.#under.get(socket) ?? socket);
  }

  /**
   * Every answer owed on `socket` has ended: it may be closed for room again, as the newest such (a
   * keep-alive client may hold it idle, or trickle its next request, as long as a silent one).
   */
  idle(socket: Socket): void {
    const tcp = this.#under.get(socket) ?? socket;
    if (this.#open.has(tcp) && !this.#unserved.has(tcp)) this.#closable(tcp, tcp.remoteAddress ?? '');
  }

  /** How many are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Closes the connections that have not sent a byte in the `graceMs` since they were accepted. */
  closeSilent(graceMs: number): void {
    const now = monotonicMs();
    for (const [socket, since] of this.#open) if (socket.bytesRead === 0 && now - since >= graceMs) socket.destroy();
  }

  /** Closes every connection still open, whatever it is doing: the end of a stop's patience. */
  destroyAll(): void {
    for (const socket of this.#open.keys()) socket.destroy();
  }

  /**
   * Closes one connection with no request in progress, from the address that holds the most of them
   * (a client flooding from a few addresses then closes its own, not a client that opened one), the
   * oldest of that address; between addresses holding as many, the oldest of all. Only one that has
   * had its chance to send a request is closed: not one accepted (or idle) in this turn of the event
   * loop or the one before (connections are accepted in batches, their bytes read a turn later), and
   * one closable for less than MIN_AGE_MS only when there is no older one: a client across a real
   * network sends its request a round trip or two after its connect. Its slot is free at once.
   */
  #makeRoom(): boolean {
    const victim = this.#victim(monotonicMs() - MIN_AGE_MS) ?? this.#victim(Infinity);
    if (victim === undefined) return false;
    this.#forget(victim);
    // With a code of its own, which a TLS handshake cut by it reports (`tlsClientError`): the client
    // did not fail its handshake, and the metrics count it as closed for room, not as a failure.
    victim.destroy(Object.assign(new Error('closed to make room for a new connection'), { code: CLOSED_FOR_ROOM }));
    this.evicted++;
    return true;
  }

  /** The victim among connections closable since `before` (monotonic ms) at the latest, and two turns or more. */
  #victim(before: number): Socket | undefined {
    let victim: Socket | undefined;
    let held = 0;
    let since = Infinity;
    for (const sockets of this.#unservedFrom.values()) {
      if (sockets.size < held) continue;
      // Each address's sockets are in the order they became closable: its first is its oldest.
      for (const socket of sockets) {
        const info = this.#unserved.get(socket);
        if (info !== undefined && this.#turn - info.turn >= 2 && info.since <= before && (sockets.size > held || info.since < since)) {
          [victim, held, since] = [socket, sockets.size, info.since];
        }
        break;
      }
    }
    return victim;
  }

  #closable(socket: Socket, address: string): void {
    this.#unserved.set(socket, { turn: this.#turn, since: monotonicMs(), address });
    let from = this.#unservedFrom.get(address);
    if (from === undefined) this.#unservedFrom.set(address, (from = new Set()));
    from.add(socket);
    if (this.#turnsToCount === 0) setImmediate(this.#countTurn);
    this.#turnsToCount = 2;
  }

  readonly #countTurn = (): void => {
    this.#turn++;
    if (--this.#turnsToCount > 0) setImmediate(this.#countTurn);
  };

  #forget(socket: Socket): void {
    this.#open.delete(socket);
    this.#forgetUnserved(socket);
  }

  #forgetUnserved(socket: Socket): void {
    const waiting = this.#unserved.get(socket);
    if (waiting === undefined) return;
    this.#unserved.delete(socket);
    const from = this.#unservedFrom.get(waiting.address);
    from?.delete(socket);
    if (from?.size === 0) this.#unservedFrom.delete(waiting.address);
  }
}

function ignoreError(): void {}
