import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { HttpError } from '../http/http-error.js';
import { clientErrorResponse, errorReply, rawErrorResponse, send } from '../http/respond.js';
import { errorCode } from '../lib/system-error.js';
import { jsonLogger } from '../lib/logger.js';
import { createPetstore, type Petstore, type PetstoreOptions } from './petstore.js';

export interface ListenOptions extends PetstoreOptions {
  port?: number;
  host?: string;
  /** Limits that keep slow or idle clients from holding the server (milliseconds, bytes, count). */
  headersTimeout?: number;
  requestTimeout?: number;
  keepAliveTimeout?: number;
  maxHeaderSize?: number;
  maxConnections?: number;
  /** How long a graceful stop waits for requests in flight before closing their connections. */
  shutdownTimeout?: number;
}

export interface RunningServer {
  server: Server;
  petstore: Petstore;
  /** `http://host:port`, with the port actually bound (useful with port 0). */
  url: string;
  /** Stops accepting, finishes requests in flight, makes the store durable. */
  close(): Promise<void>;
}

export const SERVER_DEFAULTS = {
  port: 8080,
  host: '127.0.0.1',
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  maxHeaderSize: 16 * 1024,
  maxConnections: 1_000,
  shutdownTimeout: 10_000,
} as const;

/** Creates the service and serves it on `node:http`. */
export async function listen(options: ListenOptions): Promise<RunningServer> {
  const logger = options.logger ?? jsonLogger();
  const petstore = await createPetstore({ ...options, logger });
  let closing = false;
  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    if (closing) res.setHeader('connection', 'close');
    petstore.handler(req, res);
  };
  const headersTimeout = options.headersTimeout ?? SERVER_DEFAULTS.headersTimeout;
  const requestTimeout = options.requestTimeout ?? SERVER_DEFAULTS.requestTimeout;
  const server = createServer({
    maxHeaderSize: options.maxHeaderSize ?? SERVER_DEFAULTS.maxHeaderSize,
    headersTimeout,
    requestTimeout,
    keepAliveTimeout: options.keepAliveTimeout ?? SERVER_DEFAULTS.keepAliveTimeout,
    // Node enforces the two timeouts above from a periodic check, every 30 s by default, which
    // would let a slow client outlive its deadline by that much. A quarter of the shorter timeout
    // keeps them within 25 %; it is the only timer an idle server has (2.5 s with the defaults).
    connectionsCheckingInterval: checkingInterval(headersTimeout, requestTimeout),
    // HTTP/1.1 without Host is refused by the app with an Error body, instead of Node's bare 400.
    requireHostHeader: false,
  }, onRequest);
  server.maxConnections = options.maxConnections ?? SERVER_DEFAULTS.maxConnections;
  // Answer `Expect: 100-continue` ourselves, so that 401, 413 and 415 go out before the body is sent.
  server.on('checkContinue', onRequest);
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    send(res, errorReply(new HttpError(417, 'expectation_failed', 'only "Expect: 100-continue" is supported')), ['connection', 'close']);
  });
  // Requests Node's parser refuses still get an Error body, with Node's own status kept (431, 408, 400).
  server.on('clientError', (error: Error, socket: Duplex) => {
    const code = errorCode(error);
    // As Node's own handler does: no second answer on a connection whose response already went out
    // (a refused request's unread body that turns out malformed).
    const answered = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent === true;
    if (code === 'ECONNRESET' || !socket.writable || answered) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorResponse(code));
  });
  // Without a listener Node drops CONNECT silently; this server tunnels nothing, and says so.
  server.on('connect', (_req: IncomingMessage, socket: Duplex) => {
    socket.end(rawErrorResponse(new HttpError(405, 'method_not_allowed', 'CONNECT is not supported')));
  });

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? SERVER_DEFAULTS.port, options.host ?? SERVER_DEFAULTS.host, () => {
        server.off('error', reject);
        // From now on a failed accept (EMFILE on a small ulimit) is reported, not a crash.
        server.on('error', (error) => logger.error('the server could not accept a connection', error));
        resolve();
      });
    });
  } catch (error) {
    await petstore.close();
    throw error;
  }
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => (closed ??= (async () => {
    closing = true;
    const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
    // Requests in flight finish; their keep-alive connections are closed as soon as they turn idle,
    // and any still open after the grace period are cut.
    const sweep = setInterval(() => server.closeIdleConnections(), 50);
    const deadline = setTimeout(() => server.closeAllConnections(), options.shutdownTimeout ?? SERVER_DEFAULTS.shutdownTimeout);
    server.closeIdleConnections();
    try {
      await stopped;
    } finally {
      clearInterval(sweep);
      clearTimeout(deadline);
    }
    await petstore.close();
  })());

  return { server, petstore, url: `http://${host}:${address.port}`, close };
}

function checkingInterval(headersTimeout: number, requestTimeout: number): number {
  return Math.min(5_000, Math.max(100, Math.floor(Math.min(headersTimeout, requestTimeout) / 4)));
}
