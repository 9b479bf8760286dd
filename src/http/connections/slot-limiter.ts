import type { Socket } from 'node:net';
import { monotonicMs } from '../../lib/monotonic.js';

/** The code of the error a connection closed for room is destroyed with. */
export const CLOSED_FOR_ROOM = 'ERR_PETSTORE_CLOSED_FOR_ROOM';

/** A connection closable for less than this is closed for room only when no older one can be. */
const MIN_AGE_MS = 50;

/**
 * Every TCP connection the listener has accepted, from its accept to its close, whatever became of
 * it: read by the HTTP parser, still in its TLS handshake, or handed out of the parser (CONNECT).
 * None of them can end the process, and the stop can close all of them: the server's own account
 * of requests (OwedAnswers) and Node's (`closeAllConnections`) both miss a socket handed out.
 *
 * It also keeps the limit of open connections (`max`), in place of Node's `maxConnections`, which
 * refuses the newest connection: then clients that open connections and send nothing, reopening each
 * as it is closed, hold every slot and no one else gets in. Here, at the limit, a connection with no
 * request in progress (none brought yet, or idle since its last answer, or with only part of its next
 * request's headers) is closed to make room (#makeRoom says which); only when none can be is the new
 * one refused. A request is in progress from its headers to the end of its answer (`busy`, `idle`).
 */
export class SlotLimiter {
  /** Each open socket's slot, in the order of their accepts. */
  readonly #open = new Map<Socket, Slot>();
  /** By the client's address: its open sockets with no request in progress, in the order they became so. */
  readonly #addresses = new Map<string, Address>();
  /** The addresses that have such a socket now: what a choice of the one to close looks through. */
  readonly #withClosable = new Set<Address>();
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

  constructor(
    readonly max = Infinity,
    tls = false,
  ) {
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
    let from = this.#addresses.get(address);
    if (from === undefined) this.#addresses.set(address, (from = { address, open: 0, closable: new Set() }));
    from.open++;
    const now = monotonicMs();
    const slot: Slot = { acceptedAt: now, from, closable: false, turn: 0, since: 0 };
    this.#open.set(socket, slot);
    this.#closable(socket, slot, now);
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
    // Called for every request: a flag and one Set operation, no allocation (issue 34).
    const tcp = this.#tcp(socket);
    const slot = this.#open.get(tcp);
    if (slot === undefined || !slot.closable) return;
    slot.closable = false;
    this.#leave(tcp, slot.from);
  }

  /**
   * Every answer owed on `socket` has ended (at monotonic `now`): it may be closed for room again, as
   * the newest such (a keep-alive client may hold it idle, or trickle its next request, as long as a
   * silent one).
   */
  idle(socket: Socket, now = monotonicMs()): void {
    const tcp = this.#tcp(socket);
    const slot = this.#open.get(tcp);
    if (slot !== undefined && !slot.closable) this.#closable(tcp, slot, now);
  }

  /** How many are open. */
  get size(): number {
    return this.#open.size;
  }

  /** How many client addresses hold a connection that could be closed for room now. */
  get closableAddresses(): number {
    return this.#withClosable.size;
  }

  /** Closes the connections that have not sent a byte in the `graceMs` since they were accepted. */
  closeSilent(graceMs: number): void {
    const now = monotonicMs();
    for (const [socket, slot] of this.#open)
      if (socket.bytesRead === 0 && now - slot.acceptedAt >= graceMs) socket.destroy();
  }

  /** Closes every connection still open, whatever it is doing: the end of a stop's patience. */
  destroyAll(): void {
    for (const socket of this.#open.keys()) socket.destroy();
  }

  #tcp(socket: Socket): Socket {
    return this.#byPeer === undefined ? socket : (this.#under.get(socket) ?? socket);
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
    for (const { closable } of this.#withClosable) {
      if (closable.size < held) continue;
      // Each address's sockets are in the order they became closable: its first is its oldest.
      for (const socket of closable) {
        const slot = this.#open.get(socket);
        if (
          slot !== undefined &&
          this.#turn - slot.turn >= 2 &&
          slot.since <= before &&
          (closable.size > held || slot.since < since)
        ) {
          [victim, held, since] = [socket, closable.size, slot.since];
        }
        break;
      }
    }
    return victim;
  }

  #closable(socket: Socket, slot: Slot, now: number): void {
    slot.closable = true;
    slot.turn = this.#turn;
    slot.since = now;
    slot.from.closable.add(socket);
    if (slot.from.closable.size === 1) this.#withClosable.add(slot.from);
    if (this.#turnsToCount === 0) setImmediate(this.#countTurn);
    this.#turnsToCount = 2;
  }

  readonly #countTurn = (): void => {
    this.#turn++;
    if (--this.#turnsToCount > 0) setImmediate(this.#countTurn);
  };

  #forget(socket: Socket): void {
    const slot = this.#open.get(socket);
    if (slot === undefined) return;
    this.#open.delete(socket);
    this.#leave(socket, slot.from);
    if (--slot.from.open === 0) this.#addresses.delete(slot.from.address);
  }

  #leave(socket: Socket, from: Address): void {
    if (from.closable.delete(socket) && from.closable.size === 0) this.#withClosable.delete(from);
  }
}

/** One accepted connection. */
interface Slot {
  /** Monotonic ms of the accept. */
  acceptedAt: number;
  from: Address;
  /** No request in progress: it may be closed for room; since the event loop's `turn` and monotonic ms `since`. */
  closable: boolean;
  turn: number;
  since: number;
}

/**
 * The open connections of one client address: kept while any is open, so that a request finds its
 * address's set through its slot, not by a lookup.
 */
interface Address {
  address: string;
  open: number;
  closable: Set<Socket>;
}

function ignoreError(): void {}
