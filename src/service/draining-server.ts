import { Server } from 'node:http';
import { Server as HttpsServer } from 'node:https';

/*
 * Node's close() also destroys the connections its parser sees as idle, which cuts a keep-alive
 * request already on the wire. The stop (listen.ts) stops accepting with stopAccepting() instead,
 * and its quiet sweep closes those connections once they have stayed quiet. Outside it,
 * closeIdleConnections() and close() do what Node's do.
 */

/** The body both servers share: a close made by the stop keeps the idle connections open. */
class IdleKeeper {
  #keeping = false;

  /** Whether a close running now is the stop's, whose idle connections stay open. */
  get keeping(): boolean {
    return this.#keeping;
  }

  /** Runs `close` (the server's own) so that the idle connections it would destroy are kept. */
  stopAccepting(close: (callback: () => void) => void, done: () => void): void {
    this.#keeping = true;
    try {
      close(() => done());
    } finally {
      this.#keeping = false;
    }
  }
}

/** node:http's server, whose stop leaves idle connections open for the caller to close. */
export class DrainingServer extends Server {
  readonly #idle = new IdleKeeper();

  /** Stops accepting connections; `done` runs once every open one has closed. */
  stopAccepting(done: () => void): void {
    this.#idle.stopAccepting((callback) => this.close(callback), done);
  }

  override closeIdleConnections(): void {
    if (!this.#idle.keeping) super.closeIdleConnections();
  }
}

/** node:https's server, likewise. */
export class DrainingHttpsServer extends HttpsServer {
  readonly #idle = new IdleKeeper();

  stopAccepting(done: () => void): void {
    this.#idle.stopAccepting((callback) => this.close(callback), done);
  }

  override closeIdleConnections(): void {
    if (!this.#idle.keeping) super.closeIdleConnections();
  }
}
