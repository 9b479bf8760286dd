import type { ServerResponse } from 'node:http';
import { endUnheard } from './unheard-end.js';
import type { Socket } from 'node:net';

/**
 * Unsent bytes in all connections at most (--max-connections × 8 answers could be a gigabyte); past it
 * the stalled connections holding the most are ended.
 */
export const TOTAL_UNSENT = 64 * 1024 * 1024;

/** Why the server ended a connection on its own (`petstore_http_ended_connections_total`). */
export const ENDINGS = ['send_timeout', 'pipelining_limit', 'unsent_limit'] as const;
export type Ending = (typeof ENDINGS)[number];

/** What the watch reads and keeps of one connection (connections.ts). */
export interface Sending {
  readonly socket: Socket;
  /** Responses not yet closed: being answered, or waiting for their turn. */
  readonly owed: ReadonlySet<ServerResponse>;
  /** Whether every request received on it is complete: then all it does is send. */
  received: boolean;
  /** Bytes the kernel had taken at the last progress seen, and when (monotonic ms; NaN: not seen owing yet). */
  taken: number;
  progressAt: number;
  /** Told to the slots as closable for want of progress; busy again on the next progress. */
  stalled: boolean;
}

/**
 * What the connection slots are told (slot-limiter.ts): closable since, or busy again; and whose client
 * floods, leaving answers untaken (first-reads.ts): a connection ended for it, or stalled with more
 * requests pipelined behind its answers.
 */
export interface SlotNotices {
  idle(socket: Socket, since: number): void;
  busy(socket: Socket): void;
  flooding?(socket: Socket): void;
}

/**
 * Answers that do not leave, watched from a sweep (nginx's send_timeout, Go's WriteTimeout). What
 * counts is progress, not time: the bytes the kernel has taken from a connection. One that takes
 * none for `timeoutMs` while it has bytes to send is ended; one that took none since the last sweep
 * and has nothing left to receive is closable at --max-connections like an idle one, until it moves
 * again; and while more than TOTAL_UNSENT bytes wait in all, the stalled ones holding most are ended.
 */
export class SendWatch {
  constructor(
    readonly timeoutMs: number,
    readonly slots: SlotNotices | undefined,
    readonly ended: Record<Ending, number>,
  ) {}

  /**
   * Every `intervalMs` while answers are owed: what a timeout may overrun, and how long a connection
   * makes no progress before it is closable at the limit (a client that reads takes some of its
   * answers within a quarter of a second, whatever its link).
   */
  get intervalMs(): number {
    return Math.min(250, Math.max(25, this.timeoutMs / 4));
  }

  /** Looks at each connection owing answers at monotonic `now`; false when none owes any. */
  sweep(connections: Iterable<Sending>, now: number): boolean {
    let owing = false;
    let total = 0;
    const stalled: Array<[Sending, number]> = [];
    for (const connection of connections) {
      if (connection.owed.size === 0 || connection.socket.destroyed) continue;
      owing = true;
      const { socket } = connection;
      const bytes = unsentBytes(connection);
      // Bytes handed to the socket whose writes have completed: what the kernel has taken.
      const taken = socket.bytesWritten - socket.writableLength;
      // First seen owing since it last owed nothing (NaN): its answers have just begun.
      if (bytes === 0 || taken !== connection.taken || Number.isNaN(connection.progressAt)) {
        connection.taken = taken;
        connection.progressAt = now;
        if (connection.stalled) {
          connection.stalled = false;
          this.slots?.busy(socket);
        }
        total += bytes;
        continue;
      }
      if (now - connection.progressAt >= this.timeoutMs) {
        this.end(connection, 'send_timeout');
        continue;
      }
      if (!connection.stalled && connection.received) {
        connection.stalled = true;
        this.slots?.idle(socket, connection.progressAt);
        // A slow reader of one answer (an event stream, a big page) is not flooding; a pipeliner is.
        if (connection.owed.size > 1) this.slots?.flooding?.(socket);
      }
      total += bytes;
      stalled.push([connection, bytes]);
    }
    if (total > TOTAL_UNSENT) {
      stalled.sort((a, b) => b[1] - a[1]);
      for (const [connection, bytes] of stalled) {
        if (total <= TOTAL_UNSENT) break;
        this.end(connection, 'unsent_limit');
        total -= bytes;
      }
    }
    return owing;
  }

  /** Ends `connection` for `why`, counted, and says so. */
  end(connection: Sending, why: Ending): void {
    this.ended[why]++;
    this.slots?.flooding?.(connection.socket);
    endUnheard(connection.socket);
  }
}

/** The bytes a connection holds unsent: its socket's buffer, and the answers made behind the one it writes. */
function unsentBytes(connection: Sending): number {
  let bytes = connection.socket.writableLength;
  for (const res of connection.owed) if (res.socket == null) bytes += res.writableLength;
  return bytes;
}
