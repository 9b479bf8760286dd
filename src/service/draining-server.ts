import { Server } from 'node:http';
import { Server as HttpsServer } from 'node:https';

/*
 * Node's close() also destroys the connections its parser sees as idle, which cuts a keep-alive
 * request already on the wire. The stop (listen.ts) stops accepting with stopAccepting() instead,
 * and its quiet sweep closes those connections once they have stayed quiet. Outside it,
 * closeIdleConnections() and close() do what Node's do.
 */

/** node:http's server, whose stop leaves idle connections open for the caller to close. */
export class DrainingServer extends Server {
  #keepIdle = false;

  /** Stops accepting connections; `done` runs once every open one has closed. */
  stopAccepting(done: () => void): void {
    this.#keepIdle = true;
    try {
      this.close(() => done());
    } finally {
      this.#keepIdle = false;
    }
  }

  override closeIdleConnections(): void {
    if (!this.#keepIdle) super.closeIdleConnections();
  }
}

/** node:https's server, likewise. */
export class DrainingHttpsServer extends HttpsServer {
  #keepIdle = false;

  /** Stops accepting connections; `done` runs once every open one has closed. */
  stopAccepting(done: () => void): void {
    this.#keepIdle = true;
    try {
      this.close(() => done());
    } finally {
      this.#keepIdle = false;
    }
  }

  override closeIdleConnections(): void {
    if (!this.#keepIdle) super.closeIdleConnections();
  }
}
