import type { Socket } from 'node:net';

/**
 * Every TCP connection the listener has accepted, from its accept to its close, whatever became of
 * it: read by the HTTP parser, still in its TLS handshake, or handed out of the parser (CONNECT).
 * None of them can end the process, and the stop can close all of them: the server's own account
 * of requests (Connections) and Node's (`closeAllConnections`) both miss a socket handed out.
 */
export class AcceptedSockets {
  /** Each open socket and when it was accepted. */
  readonly #open = new Map<Socket, number>();

  add(socket: Socket): void {
    this.#open.set(socket, Date.now());
    // Node's HTTP server stops listening for a socket's errors when it hands it out of its parser,
    // and an 'error' nobody listens to ends the process: a client's reset must not. There is nothing
    // to do about one: the socket is destroyed with it, and whoever holds it sees it close.
    socket.on('error', ignoreError);
    socket.once('close', () => this.#open.delete(socket));
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
}

function ignoreError(): void {}
