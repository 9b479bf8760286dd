/**
 * The answers given at the edge of `node:http`, before or instead of the request pipeline: what
 * Node's parser refuses, an unsupported `Expect`, CONNECT, and requests that arrive while the
 * server stops. Each error answer waits for the responses already owed on its connection.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { Connections } from './connections.js';
import { HttpError } from './http-error.js';
import { clientErrorResponse, errorReply, rawErrorResponse, send } from './respond.js';
import { errorCode } from '../lib/system-error.js';

const STOPPING = new HttpError(503, 'unavailable', 'the server is stopping; try again shortly', { 'retry-after': '1' });

/** `Expect` other than 100-continue: 417, and the connection closes (the body may follow). */
export function refuseExpectation(_req: IncomingMessage, res: ServerResponse): void {
  send(res, errorReply(new HttpError(417, 'expectation_failed', 'only "Expect: 100-continue" is supported')), ['connection', 'close']);
}

/**
 * Requests Node's parser refuses still get an Error body, with Node's own status kept (431, 408,
 * 400), after every response owed for the requests before it.
 */
export function clientErrorHandler(connections: Connections): (error: Error, socket: Duplex) => void {
  return (error, socket) => {
    const code = errorCode(error);
    if (code === 'ECONNRESET' || !socket.writable) {
      socket.destroy();
      return;
    }
    connections.afterOwed(socket as Socket, (reply) => {
      // An owed response may have closed the connection itself (Connection: close): it is ending.
      if (!socket.writable) return;
      if (!reply) socket.destroy();
      else socket.end(clientErrorResponse(code));
    });
  };
}

/** Without a listener Node drops CONNECT silently; this server tunnels nothing, and says so in turn. */
export function connectHandler(connections: Connections): (req: IncomingMessage, socket: Duplex) => void {
  return (_req, socket) => {
    connections.afterOwed(socket as Socket, () => {
      if (socket.writable) socket.end(rawErrorResponse(new HttpError(405, 'method_not_allowed', 'CONNECT is not supported')));
    });
  };
}

/**
 * A request that arrives once the stop has begun: 503 and close. Its body is read first, so that
 * closing does not reset a connection with unread bytes; with `Expect: 100-continue` none is coming.
 */
export function refuseWhileStopping(req: IncomingMessage, res: ServerResponse): void {
  const answer = (): void => send(res, errorReply(STOPPING), ['connection', 'close']);
  if (req.complete || req.headers.expect !== undefined) answer();
  else req.on('end', answer).resume();
}
