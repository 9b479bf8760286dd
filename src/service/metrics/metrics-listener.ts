import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { SlotLimiter } from '../../http/connections/slot-limiter.js';
import { EXPOSITION_CONTENT_TYPE } from '../../lib/metrics/exposition.js';
import type { Logger } from '../../lib/logger.js';

export interface MetricsListener {
  /** `http://host:port/metrics`, with the port actually bound. */
  url: string;
  close(): Promise<void>;
}

/**
 * The metrics on a listener of their own: `GET /metrics` (and HEAD) only, plain HTTP, no key; any
 * other path is a 404 and any other method a 405, with a plain-text body. The API's port never
 * serves them. A listen error carries `listener: 'metrics'`, so the command line names the right flag.
 */
export async function listenMetrics(
  port: number,
  host: string,
  expose: () => Promise<string>,
  logger: Logger,
): Promise<MetricsListener> {
  // A scraper needs one connection, a few at most. At 32, the oldest connection that has not sent a
  // request yet is closed for a new one (accepted-sockets.ts), so silent connections cannot block scrapes.
  const sockets = new SlotLimiter(32);
  const server = createServer(
    {
      headersTimeout: 10_000,
      requestTimeout: 10_000,
      keepAliveTimeout: 5_000,
      // Node checks the two timeouts every 30 s by default, which would let a silent connection stay 40 s.
      connectionsCheckingInterval: 2_500,
    },
    (req, res) => {
      // Closable for room again once answered: a scraper's keep-alive connection idles between scrapes.
      const socket = req.socket;
      sockets.busy(socket);
      res.once('close', () => sockets.idle(socket));
      answer(req, res, expose, logger);
    },
  );
  server.on('connection', (socket: Socket) => sockets.add(socket));
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error) => reject(Object.assign(error, { listener: 'metrics' })));
    server.listen(port, host, () => {
      server.removeAllListeners('error');
      server.on('error', (error) => logger.error('the metrics listener could not accept a connection', error));
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const shown = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${shown}:${address.port}/metrics`,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function answer(req: IncomingMessage, res: ServerResponse, expose: () => Promise<string>, logger: Logger): void {
  const path = (req.url ?? '').split('?', 1)[0];
  if (path !== '/metrics') return plain(res, 404, 'not found: this port serves only GET /metrics\n');
  if (req.method !== 'GET' && req.method !== 'HEAD')
    return plain(res, 405, `method ${req.method ?? ''} is not allowed here; allowed: GET, HEAD\n`, [
      'allow',
      'GET, HEAD',
    ]);
  expose().then(
    (text) => {
      res.writeHead(200, [
        'content-type',
        EXPOSITION_CONTENT_TYPE,
        'cache-control',
        'no-store',
        'content-length',
        Buffer.byteLength(text),
      ]);
      res.end(req.method === 'HEAD' ? undefined : text);
    },
    (error: unknown) => {
      logger.error('could not gather the metrics', error);
      plain(res, 500, 'the metrics could not be gathered; the server log says why\n');
    },
  );
}

/** A short plain-text answer; the connection closes after it, so an unread request body does not linger. */
function plain(res: ServerResponse, status: number, text: string, headers: string[] = []): void {
  res.writeHead(status, [
    'content-type',
    'text/plain; charset=utf-8',
    'cache-control',
    'no-store',
    'connection',
    'close',
    ...headers,
    'content-length',
    Buffer.byteLength(text),
  ]);
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
