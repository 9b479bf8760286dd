import type { Socket } from 'node:net';

/**
 * Every TCP connection the listener has accepted, from its accept to its close, whatever became of
 * it: read by the HTTP parser, still in its TLS handshake, or handed out of the parser (CONNECT).
 * None of them can end the process, and the stop can close all of them: the server's own account
 * of requests (Connections) and Node's (`closeAllConnections`) both miss a socket handed out.
 *
 * It also keeps the limit of open connections (`max`), in place of Node's `maxConnections`, which
 * refuses the newest connection: then clients that open connections and send nothing, reopening each
 * as it is closed, hold every slot and no one else gets in. Here, at the limit, the oldest connection
 * that has not yet brought the headers of a request (it never reached a handler) is closed to make
 * room; only when every open connection has brought one is the new one refused.
 */
export class AcceptedSockets {
  /** Each open socket and when it was accepted, in the order of their accepts. */
  readonly #open = new Map<Socket, number>();
  /** The open sockets that have not brought a request's headers yet, oldest first. */
  readonly #unserved = new Set<Socket>();
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
    if (this.#open.size >= this.max && !this.#makeRoom()) {
      this.refused++;
      socket.destroy();
      return;
    }
    this.#open.set(socket, Date.now());
    this.#unserved.add(socket);
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

  /** `socket` (TCP, or TLS after `secured`) has brought a request's headers: it is no longer closed to make room. */
  served(socket: Socket): void {
    this.#unserved.delete(this.#under.get(socket) ?? socket);
  }

  /** How many are open. */
  get size(): number {
    return this.#open.size;
  }

  /** Closes the connections that have not sent a byte in the `graceMs` since they were accepted. */
  closeSilent(graceMs: number): void {
    const now = Date.now();
    for (const [socket, since] of this.#open) if (socket.bytesRead === 0 && now - since >= graceMs) socket.destroy();
  }

  /** Closes every connection still open, whatever it is doing: the end of a stop's patience. */
  destroyAll(): void {
    for (const socket of this.#open.keys()) socket.destroy();
  }

  /** Closes the oldest connection without a request, if there is one; its slot is free at once. */
  #makeRoom(): boolean {
    for (const oldest of this.#unserved) {
      this.#forget(oldest);
      oldest.destroy();
      this.evicted++;
      return true;
    }
    return false;
  }

  #forget(socket: Socket): void {
    this.#open.delete(socket);
    this.#unserved.delete(socket);
  }
}

function ignoreError(): void {}
