/**
 * The answers given at the edge of `node:http`, before or instead of the request pipeline: what
 * Node's parser refuses, an unsupported `Expect`, CONNECT, and requests that arrive while the
 * server stops. Each error answer waits for the responses already owed on its connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { OwedAnswers } from './owed-answers.js';
import { HttpError, stoppingError } from '../http-error.js';
import { versionNotSupported } from '../pipeline/request-line.js';
import { clientErrorResponse, errorReply, rawErrorResponse, send } from '../respond.js';
import { errorCode } from '../../lib/system-error.js';

/**
 * How long a connection the server closes after an answer waits for its client to close too: long
 * enough for the answer to arrive and be read before the close (a close with unread bytes is a reset,
 * which can destroy the answer at the client), short enough that no client keeps a slot by staying.
 */
const CLOSE_LINGER_MS = 2000;

/** `Expect` other than 100-continue: 417, and the connection closes (the body may follow). */
export function refuseExpectation(_req: IncomingMessage, res: ServerResponse): void {
  send(res, errorReply(new HttpError(417, 'expectation_failed', 'only "Expect: 100-continue" is supported')), [
    'connection',
    'close',
  ]);
}

/**
 * Requests Node's parser refuses still get an Error body, with Node's own status kept (431, 408,
 * 400; 505 for a version it cannot parse), after every response owed for the requests before it.
 */
export function clientErrorHandler(connections: OwedAnswers): (error: Error, socket: Duplex) => void {
  return (error, socket) => {
    const code = errorCode(error);
    // A TLS failure (a handshake that timed out) has no session to carry an HTTP answer: just close.
    if (
      code === 'ECONNRESET' ||
      code?.startsWith('ERR_TLS') === true ||
      code?.startsWith('ERR_SSL') === true ||
      !socket.writable
    ) {
      socket.destroy();
      return;
    }
    connections.afterOwed(socket as Socket, (reply) => {
      // An owed response may have closed the connection itself (Connection: close): it is ending.
      if (!socket.writable) return;
      if (!reply) socket.destroy();
      else
        closeAfter(
          socket,
          unsupportedVersion(error) ? rawErrorResponse(versionNotSupported()) : clientErrorResponse(code),
        );
    });
  };
}

/**
 * Node's parser refuses versions it does not know with HPE_INVALID_VERSION, and also a PRI preface
 * or a bare LF there: only a well-formed `HTTP/d.d` CRLF at the error (`bytesParsed`) is a 505.
 */
function unsupportedVersion(error: Error): boolean {
  const { code, rawPacket, bytesParsed } = error as Error & {
    code?: unknown;
    rawPacket?: unknown;
    bytesParsed?: unknown;
  };
  if (
    code !== 'HPE_INVALID_VERSION' ||
    !Buffer.isBuffer(rawPacket) ||
    typeof bytesParsed !== 'number' ||
    bytesParsed < 9
  )
    return false;
  const version = / HTTP\/(\d\.\d)\r\n$/.exec(rawPacket.toString('latin1', bytesParsed - 9, bytesParsed + 2));
  return version !== null && version[1] !== '1.0' && version[1] !== '1.1';
}

/**
 * Without a listener Node drops CONNECT silently; this server tunnels nothing, and says so in turn.
 * The socket is no longer the parser's: what the client sends after its CONNECT is read and dropped,
 * so that the close after the answer is not a reset for unread bytes.
 */
export function connectHandler(connections: OwedAnswers): (req: IncomingMessage, socket: Duplex) => void {
  return (_req, socket) => {
    socket.resume();
    connections.afterOwed(socket as Socket, () => {
      if (socket.writable)
        closeAfter(socket, rawErrorResponse(new HttpError(405, 'method_not_allowed', 'CONNECT is not supported')));
      else socket.destroy();
    });
  };
}

/** Sends the last bytes of a connection and closes it, at the latest CLOSE_LINGER_MS later. */
function closeAfter(socket: Duplex, answer: string): void {
  socket.end(answer);
  const cut = setTimeout(() => socket.destroy(), CLOSE_LINGER_MS);
  socket.once('close', () => clearTimeout(cut));
}

/**
 * A request that arrives once the stop has begun: 503 and close. Its body is read first, so that
 * closing does not reset a connection with unread bytes; with `Expect: 100-continue` none is coming.
 */
export function refuseWhileStopping(req: IncomingMessage, res: ServerResponse): void {
  const answer = (): void => send(res, errorReply(stoppingError()), ['connection', 'close']);
  if (req.complete || req.headers.expect !== undefined) answer();
  else req.on('end', answer).resume();
}
