import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { monotonicMs } from '../lib/monotonic.js';
import { writeHeldNow } from './write-batch.js';

/** What the server knows of one open connection. */
interface Connection {
  socket: Socket;
  /** Responses not yet closed (sent, or dropped with their connection), in request order. */
  owed: Set<ServerResponse>;
  /** The latest request and its response: a parse error inside a body belongs to it. */
  lastReq: IncomingMessage | undefined;
  lastRes: ServerResponse | undefined;
  /** When the connection last owed nothing, and how many bytes it had received by then. */
  quietSince: number;
  bytesAtQuiet: number;
  /** Runs once nothing is owed anymore: an error answer or a close waiting for its turn. */
  then: (() => void) | undefined;
  /** Told each time nothing is owed anymore, and the monotonic ms of it (the connection slots' `idle`). */
  idle: ((socket: Socket, now: number) => void) | undefined;
}

/**
 * The server's own account of its connections and the responses each still owes, kept from public
 * events only ('connection', 'request', the response's 'close'). It tells the edge when an error
 * answer may go out without overtaking an earlier response, and the stop which connections can be
 * closed without cutting a request.
 */
export class Connections {
  readonly #open = new Map<Socket, Connection>();

  /** `idle` is told of a connection each time the last response it owes has ended. */
  constructor(readonly idle?: (socket: Socket, now: number) => void) {}

  add(socket: Socket): void {
    this.#open.set(socket, { socket, owed: new Set(), lastReq: undefined, lastRes: undefined, quietSince: monotonicMs(), bytesAtQuiet: 0, then: undefined, idle: this.idle });
    socket.once('close', () => this.#open.delete(socket));
  }

  /** Counts `res` as owed until it closes: 'close' follows 'finish', once its bytes are written. */
  owe(req: IncomingMessage, res: ServerResponse): void {
    const connection = this.#open.get(req.socket as Socket);
    if (connection === undefined) return;
    connection.owed.add(res);
    connection.lastReq = req;
    connection.lastRes = res;
    // One listener for every response, told its connection through the response itself: a closure
    // and a once-wrapper per request were a measurable share of a GET (docs/design.md, "Performance").
    (res as OwedResponse)[CONNECTION] = connection;
    res.on('close', responseClosed);
  }

  /**
   * After a parse error on `socket`: calls `answer(true)` once every response owed for an earlier,
   * complete request has gone out, or `answer(false)` when the error is inside the body of a request
   * that has already been answered (one request, one answer). False when an error is already waiting.
   */
  afterOwed(socket: Socket, answer: (reply: boolean) => void): boolean {
    writeHeldNow(); // an answer made but held for its turn's end (write-batch.ts) has been given
    const connection = this.#open.get(socket);
    if (connection === undefined) {
      answer(true);
      return true;
    }
    if (connection.then !== undefined) return false;
    let reply = true;
    const { lastReq, lastRes } = connection;
    if (lastReq !== undefined && lastRes !== undefined && !lastReq.complete) {
      // Its body can never be read now: the error answer takes the place of its response.
      connection.owed.delete(lastRes);
      reply = !lastRes.headersSent;
    }
    if (connection.owed.size === 0) answer(reply);
    else connection.then = () => answer(reply);
    return true;
  }

  /** Responses not yet started, on every connection (the stop marks them `Connection: close`). */
  *unsent(): Iterable<ServerResponse> {
    for (const connection of this.#open.values()) {
      for (const res of connection.owed) if (!res.headersSent) yield res;
    }
  }

  /**
   * Closes the connections that owe nothing, have received no byte since, and have been so for
   * `graceMs`: a client that was about to send on one has had that long to be answered instead.
   */
  closeQuiet(graceMs: number): void {
    const now = monotonicMs();
    for (const [socket, connection] of this.#open) {
      if (connection.owed.size === 0 && socket.bytesRead === connection.bytesAtQuiet && now - connection.quietSince >= graceMs) socket.destroy();
    }
  }
}

const CONNECTION = Symbol('connection');
type OwedResponse = ServerResponse & { [CONNECTION]?: Connection };

function responseClosed(this: OwedResponse): void {
  const connection = this[CONNECTION] as Connection;
  connection.owed.delete(this);
  if (connection.owed.size > 0) return;
  const now = monotonicMs();
  connection.quietSince = now;
  connection.bytesAtQuiet = connection.socket.bytesRead;
  connection.idle?.(connection.socket, now);
  const then = connection.then;
  connection.then = undefined;
  then?.();
}
