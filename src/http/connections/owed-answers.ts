import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { monotonicMs } from '../../lib/monotonic.js';
import { ENDINGS, SendWatch, type Ending, type Sending, type SlotNotices } from './send-watch.js';
import type { WriteBatch } from './write-batch.js';

/**
 * Answers a connection may have made and not yet sent: its further requests wait unanswered, and it
 * is not read, until one has gone (nginx answers one pipelined request at a time; a few at once keep
 * a pipelining client's round trips filled).
 */
const ANSWERING = 8;
/**
 * Requests a connection may have unanswered in all, those waiting included. Node parses all it has
 * read at once, thousands of small requests from one read; past this the connection is ended.
 */
const OUTSTANDING = 64;

/** What answers a request: the service, or an answer of the edge. */
export type Answer = (req: IncomingMessage, res: ServerResponse) => void;

/** What the server knows of one open connection. */
interface Connection extends Sending {
  socket: Socket;
  /** Responses not yet closed (sent, or dropped with their connection), in request order. */
  owed: Set<ServerResponse>;
  /** Of those, how many are being answered; the others wait in `waiting`, in order. */
  answering: number;
  waiting: Array<[IncomingMessage, ServerResponse, Answer]>;
  /** Whether it is paused for its waiting requests (Node pauses it too, for its own reasons). */
  paused: boolean;
  /** The latest request and its response: a parse error inside a body belongs to it. */
  lastReq: IncomingMessage | undefined;
  lastRes: ServerResponse | undefined;
  /** When the connection last owed nothing, and how many bytes it had received by then. */
  quietSince: number;
  bytesAtQuiet: number;
  /** Runs once nothing is owed anymore: an error answer or a close waiting for its turn. */
  whenClear: (() => void) | undefined;
  /** Told each time nothing is owed anymore, and the monotonic ms of it (the connection slots' `idle`). */
  idle: ((socket: Socket, now: number) => void) | undefined;
}

/**
 * The server's own account of its connections and the responses each still owes, kept from public
 * events only ('connection', 'request', the response's 'close'). It tells the edge when an error
 * answer may go out without overtaking an earlier response, and the stop which connections can be
 * closed without cutting a request. It answers at most ANSWERING requests of a connection at once,
 * and watches that their answers leave (send-watch.ts).
 */
export class OwedAnswers {
  readonly #open = new Map<Socket, Connection>();
  readonly #watch: SendWatch;
  #sweep: NodeJS.Timeout | undefined;
  readonly #idle: ((socket: Socket, now: number) => void) | undefined;
  readonly #held: WriteBatch | undefined;
  /** Connections the server ended on its own, by why. */
  readonly ended = Object.fromEntries(ENDINGS.map((why) => [why, 0])) as Record<Ending, number>;

  /**
   * `slots` is told of a connection each time the last response it owes has ended (idle), and when
   * its answers stall and move again; `sendTimeoutMs` bounds how long an answer may make no progress;
   * `held` is where the service answering these connections holds its answers for the turn's end.
   */
  constructor(
    readonly slots?: SlotNotices,
    sendTimeoutMs = 60_000,
    held?: WriteBatch,
  ) {
    this.#held = held;
    this.#watch = new SendWatch(sendTimeoutMs, slots, this.ended);
    this.#idle = slots === undefined ? undefined : (socket, now) => slots.idle(socket, now);
  }

  add(socket: Socket): void {
    this.#open.set(socket, {
      socket,
      owed: new Set(),
      answering: 0,
      waiting: [],
      paused: false,
      lastReq: undefined,
      lastRes: undefined,
      quietSince: monotonicMs(),
      bytesAtQuiet: 0,
      whenClear: undefined,
      idle: this.#idle,
      received: true,
      taken: 0,
      progressAt: NaN,
      stalled: false,
    });
    socket.once('close', () => this.#open.delete(socket));
  }

  /**
   * Counts `res` as owed until it closes ('close' follows 'finish', once its bytes are written) and
   * has `answer` answer it: now, or once fewer than ANSWERING answers of its connection are unsent.
   */
  owe(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
    const connection = this.#open.get(req.socket as Socket);
    if (connection === undefined) {
      answer(req, res);
      return;
    }
    // Ended, with more of what it sent still being parsed: nothing more is answered on it.
    if (connection.socket.destroyed) return;
    connection.owed.add(res);
    connection.lastReq = req;
    connection.lastRes = res;
    // One listener for every response, told its connection through the response itself: a closure
    // and a once-wrapper per request were a measurable share of a GET (docs/design.md, "Performance").
    (res as OwedResponse)[CONNECTION] = connection;
    res.on('close', responseClosed);
    this.#sweep ??= this.#startSweep();
    if (hasRoom(connection)) {
      connection.answering++;
      (res as OwedResponse)[ANSWERED] = true;
      answer(req, res);
    } else if (connection.owed.size > OUTSTANDING) {
      this.#watch.end(connection, 'pipelining_limit');
    } else {
      connection.waiting.push([req, res, answer]);
      connection.paused = true;
      connection.socket.pause();
    }
  }

  /**
   * After a parse error on `socket`: calls `answer(true)` once every response owed for an earlier,
   * complete request has gone out, or `answer(false)` when the error is inside the body of a request
   * that has already been answered (one request, one answer). False when an error is already waiting.
   */
  afterOwed(socket: Socket, answer: (reply: boolean) => void): boolean {
    this.#held?.writeHeldNow(); // an answer made but held for its turn's end (write-batch.ts) has been given
    const connection = this.#open.get(socket);
    if (connection === undefined) {
      answer(true);
      return true;
    }
    if (connection.whenClear !== undefined) return false;
    let reply = true;
    const { lastReq, lastRes } = connection;
    if (lastReq !== undefined && lastRes !== undefined && !lastReq.complete) {
      // Its body can never be read now: the error answer takes the place of its response.
      connection.owed.delete(lastRes);
      const at = connection.waiting.findIndex(([, res]) => res === lastRes);
      if (at !== -1) connection.waiting.splice(at, 1);
      reply = !lastRes.headersSent;
    }
    if (connection.owed.size === 0) answer(reply);
    else connection.whenClear = () => answer(reply);
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
      if (
        connection.owed.size === 0 &&
        socket.bytesRead === connection.bytesAtQuiet &&
        now - connection.quietSince >= graceMs
      )
        socket.destroy();
    }
  }

  #startSweep(): NodeJS.Timeout {
    const sweep = setInterval(() => {
      // A body left unfinished because the connection is not read for its unsent answers is the server's doing.
      for (const connection of this.#open.values())
        connection.received = connection.paused || connection.lastReq?.complete !== false;
      if (this.#watch.sweep(this.#open.values(), monotonicMs())) return;
      clearInterval(sweep);
      this.#sweep = undefined;
    }, this.#watch.intervalMs);
    sweep.unref();
    return sweep;
  }
}

const CONNECTION = Symbol('connection');
const ANSWERED = Symbol('answered');
type OwedResponse = ServerResponse & { [CONNECTION]?: Connection; [ANSWERED]?: boolean };

function responseClosed(this: OwedResponse): void {
  const connection = this[CONNECTION] as Connection;
  if (this[ANSWERED] === true) connection.answering--;
  else {
    const at = connection.waiting.findIndex(([, res]) => res === this);
    if (at !== -1) connection.waiting.splice(at, 1);
  }
  connection.owed.delete(this);
  answerWaiting(connection);
  if (connection.owed.size > 0) return;
  const now = monotonicMs();
  connection.quietSince = now;
  connection.bytesAtQuiet = connection.socket.bytesRead;
  connection.stalled = false;
  connection.progressAt = NaN;
  connection.idle?.(connection.socket, now);
  const whenClear = connection.whenClear;
  connection.whenClear = undefined;
  whenClear?.();
}

/** Whether `connection` may answer one more request now. */
function hasRoom(connection: Connection): boolean {
  return connection.answering < ANSWERING;
}

/** Answers the requests waiting on `connection` while it has room, and reads it again once none waits. */
function answerWaiting(connection: Connection): void {
  if (connection.socket.destroyed) return;
  while (hasRoom(connection)) {
    const next = connection.waiting.shift();
    if (next === undefined) break;
    connection.answering++;
    (next[1] as OwedResponse)[ANSWERED] = true;
    next[2](next[0], next[1]);
  }
  if (connection.waiting.length === 0 && connection.paused) {
    connection.paused = false;
    connection.socket.resume();
  }
}
