import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { DrainingHttpsServer, DrainingServer } from './draining-server.js';
import type { AddressInfo, Socket } from 'node:net';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';
import { answerPlainHttp } from './tls/plain-http-on-tls.js';
import { reloadCertificates, type TlsOptions } from './tls/certificate-reload.js';
import { SlotLimiter } from '../http/connections/slot-limiter.js';
import { OwedAnswers } from '../http/connections/owed-answers.js';
import { FirstReads } from '../http/connections/first-reads.js';
import {
  clientErrorHandler,
  connectHandler,
  refuseExpectation,
  refuseWhileStopping,
} from '../http/connections/edge.js';
import { jsonLogger, type ServiceLogger, serviceLogger } from '../lib/logger.js';
import type { MetricsListener } from './metrics/metrics-listener.js';
import type { ServiceMetrics } from './metrics/service-metrics.js';
import { descriptorRefused } from './socket-activation.js';
import { loadMetrics, openPetstore, type Petstore, type PetstoreOptions } from './create-petstore.js';
import { DEFAULTS, type SettingOptions } from './settings.js';

/**
 * The options of `listen`: the service's, and the server's own. Those that are settings of the command line too are
 * declared in settings.ts, with their defaults.
 */
export interface ListenOptions
  extends PetstoreOptions,
    SettingOptions<
      | 'port'
      | 'host'
      | 'headersTimeout'
      | 'requestTimeout'
      | 'keepAliveTimeout'
      | 'maxHeaderSize'
      | 'maxConnections'
      | 'sendTimeout'
      | 'metricsPort'
      | 'metricsHost'
    > {
  /**
   * A socket already listening, inherited by this process (systemd's fd 3: socket-activation.ts):
   * served instead of binding `port` and `host`.
   */
  fd?: number | undefined;
  /**
   * Serve HTTPS (node:https) with this certificate chain and private key, both PEM; plain HTTP without.
   * With `certFile` and `keyFile`, the files they came from, the pair is read again when those change
   * and on `reloadTls()` (certificate-reload.ts).
   */
  tls?: TlsOptions | undefined;
}

export interface RunningServer {
  server: Server | HttpsServer;
  petstore: Petstore;
  /** `http://host:port` (`https://` with TLS), with the port actually bound (useful with port 0). */
  url: string;
  /** With `metricsPort`: `http://host:port/metrics`, the port actually bound. */
  metricsUrl: string | undefined;
  /** Stops accepting, finishes requests in flight, makes the store durable. */
  close(): Promise<void>;
  /** Reads `tls.certFile` and `tls.keyFile` again for new connections; resolves whether the pair loaded. */
  reloadTls(): Promise<boolean>;
}

/** How long the stop keeps a connection that owes nothing open, for a request already on its way. */
const STOP_GRACE_MS = 200;

/** Creates the service and serves it on `node:http`, or `node:https` with `tls`. */
export async function listen(options: ListenOptions): Promise<RunningServer> {
  const logger = serviceLogger(options.logger ?? jsonLogger());
  // Before the store is opened: a certificate and key that do not go together refuse the start.
  if (options.tls !== undefined) checkTls(options.tls);
  const metrics = options.metrics === true || options.metricsPort !== undefined ? await loadMetrics() : undefined;
  const petstore = await openPetstore({ ...options, logger }, metrics);
  // Every TCP connection, TLS or not, from its accept: with TLS, a client that never sends its hello
  // has no TLS socket yet, and the stop closes it as silent instead of waiting for the handshake timeout.
  // It keeps --max-connections too (slot-limiter.ts): Node's own limit would refuse the newest.
  const sockets = new SlotLimiter(options.maxConnections ?? DEFAULTS.maxConnections, options.tls !== undefined);
  // A connection whose answers have all ended, or stalled at a client not reading them, may be closed for room.
  const sendTimeoutMs = (options.sendTimeout ?? DEFAULTS.sendTimeout) * 1000;
  const firstReads = new FirstReads();
  const connections = new OwedAnswers(slotsOf(sockets, firstReads), sendTimeoutMs, petstore.answers);
  const stop = { requested: false };
  const onRequest = requestListener(petstore, sockets, connections, stop, options.fd !== undefined);
  const server = createServer(options, onRequest);
  if (options.tls !== undefined) answerPlainHttpSentToTls(server as HttpsServer, options, metrics, logger);
  metrics?.watchServer(server, sockets, connections);
  watchConnections(server, options.tls !== undefined, sockets, connections, onRequest, firstReads);
  const metricsListener = await startListening(server, options, metrics, logger).catch(async (error: unknown) => {
    await petstore.close();
    throw error;
  });
  petstore.serving();
  // Once listening: a start that failed leaves no poll of the files behind.
  const certificates =
    options.tls === undefined ? undefined : reloadCertificates(server as HttpsServer, options.tls, logger, metrics);

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closed ??= (async () => {
      stop.requested = true;
      await drain(server, connections, sockets, options.shutdownTimeout ?? DEFAULTS.shutdownTimeout, () =>
        petstore.closeStreams(),
      );
      await metricsListener?.close();
      await petstore.close();
    })());
  const reloadTls = (): Promise<boolean> => certificates?.reload() ?? Promise.resolve(false);
  return { server, petstore, url: serverUrl(server, options), metricsUrl: metricsListener?.url, close, reloadTls };
}

/** What OwedAnswers tells the slot limiter: a connection that may be closed for room, or one that may not. */
function slotsOf(sockets: SlotLimiter, firstReads: FirstReads): ConstructorParameters<typeof OwedAnswers>[0] {
  return {
    idle: (socket: Socket, now: number) => sockets.idle(socket, now),
    busy: (socket: Socket) => sockets.busy(socket),
    flooding: (socket: Socket) => firstReads.flooding(socket),
  };
}

/** Each request takes its connection's slot and is owed an answer, which the service gives unless the stop refuses. */
function requestListener(
  petstore: Petstore,
  sockets: SlotLimiter,
  connections: OwedAnswers,
  stop: { requested: boolean },
  inherited: boolean,
): (req: IncomingMessage, res: ServerResponse) => void {
  const answer = (req: IncomingMessage, res: ServerResponse): void => {
    // On an inherited socket (socket activation) the next process takes new connections: a request on
    // one this process accepted is its last, served rather than refused, so that a restart refuses none.
    if (stop.requested && !inherited) refuseWhileStopping(req, res);
    else {
      if (stop.requested) res.setHeader('connection', 'close');
      petstore.handler(req, res);
    }
  };
  return (req, res) => {
    sockets.busy(req.socket as Socket);
    connections.owe(req, res, answer);
  };
}

/** The `node:http` server, or `node:https` with `options.tls`, with its timeouts and limits. */
function createServer(
  options: ListenOptions,
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
): DrainingServer | DrainingHttpsServer {
  const headersTimeout = options.headersTimeout ?? DEFAULTS.headersTimeout;
  const requestTimeout = options.requestTimeout ?? DEFAULTS.requestTimeout;
  const httpOptions: ServerOptions = {
    maxHeaderSize: options.maxHeaderSize ?? DEFAULTS.maxHeaderSize,
    headersTimeout,
    requestTimeout,
    keepAliveTimeout: options.keepAliveTimeout ?? DEFAULTS.keepAliveTimeout,
    // Node enforces the two timeouts above from a periodic check, every 30 s by default, which
    // would let a slow client outlive its deadline by that much. A quarter of the shorter timeout
    // keeps them within 25 %; it is the only timer an idle server has (2.5 s with the defaults).
    connectionsCheckingInterval: checkingInterval(headersTimeout, requestTimeout),
    // HTTP/1.1 without Host is refused by the app with an Error body, instead of Node's bare 400.
    requireHostHeader: false,
  };
  if (options.tls === undefined) return new DrainingServer(httpOptions, onRequest);
  // A TLS handshake gets no longer than the request headers do (Node's own default is 120 s).
  return new DrainingHttpsServer({ ...httpOptions, ...options.tls, handshakeTimeout: headersTimeout }, onRequest);
}

/** A client that sent http:// to the TLS port gets a 400 it can read, counted and logged. */
function answerPlainHttpSentToTls(
  server: HttpsServer,
  options: ListenOptions,
  metrics: ServiceMetrics | undefined,
  logger: ServiceLogger,
): void {
  const counted = metrics?.countPlainHttp();
  answerPlainHttp(server, options.headersTimeout ?? DEFAULTS.headersTimeout, (socket) => {
    counted?.();
    // At the level of request lines: a client that sent http:// to this port.
    logger.info('plain HTTP on the HTTPS port: answered 400', { remote: socket.remoteAddress });
  });
}

/** Tells the slot limiter and the ledger of owed answers of each connection, and answers what is not a request. */
function watchConnections(
  server: DrainingServer | DrainingHttpsServer,
  tls: boolean,
  sockets: SlotLimiter,
  connections: OwedAnswers,
  onRequest: (req: IncomingMessage, res: ServerResponse) => void,
  firstReads: FirstReads,
): void {
  if (tls) firstReads.serveSecured(server);
  server.on('connection', (raw: Socket) => sockets.add(raw));
  // Requests name the socket they came on: with TLS that is the TLS socket, known once the handshake is done.
  if (!tls) {
    server.on('connection', (socket: Socket) => connections.add(socket));
    firstReads.serve(server);
  } else {
    server.on('secureConnection', (socket: Socket) => {
      sockets.secured(socket);
      connections.add(socket);
      // A CONNECT or an upgrade hands out the TLS socket, not the one SlotLimiter guards: without this,
      // a client's reset of it ends the process on Node 20.19.2, the oldest engines allows (connections.test.ts).
      socket.on('error', ignoreResetOfHandedOut);
    });
  }
  // Answer `Expect: 100-continue` ourselves, so that 401, 413 and 415 go out before the body is sent.
  server.on('checkContinue', onRequest);
  server.on('checkExpectation', (req: IncomingMessage, res: ServerResponse) => {
    sockets.busy(req.socket as Socket);
    connections.owe(req, res, refuseExpectation);
  });
  server.on('clientError', clientErrorHandler(connections));
  server.on('connect', connectHandler(connections));
}

/** The metrics listener (with `metricsPort`), then the server; a failure closes what was started. */
async function startListening(
  server: DrainingServer | DrainingHttpsServer,
  options: ListenOptions,
  metrics: ServiceMetrics | undefined,
  logger: ServiceLogger,
): Promise<MetricsListener | undefined> {
  let metricsListener: MetricsListener | undefined;
  try {
    if (metrics !== undefined && options.metricsPort !== undefined) {
      metricsListener = await metrics.serve(options.metricsPort, options.metricsHost ?? DEFAULTS.metricsHost, logger);
    }
    await bind(server, options, logger);
  } catch (error) {
    await metricsListener?.close();
    throw error;
  }
  return metricsListener;
}

/** Listens on the inherited descriptor, or on `port` and `host`. */
function bind(
  server: DrainingServer | DrainingHttpsServer,
  options: ListenOptions,
  logger: ServiceLogger,
): Promise<void> {
  const { fd } = options;
  const where =
    fd !== undefined ? { fd } : { port: options.port ?? DEFAULTS.port, host: options.host ?? DEFAULTS.host };
  return new Promise<void>((resolve, reject) => {
    const refused = (error: Error): void => reject(fd === undefined ? error : descriptorRefused(fd, error));
    server.once('error', refused);
    server.listen(where, () => {
      server.off('error', refused);
      // From now on a failed accept (EMFILE on a small ulimit) is reported, not a crash.
      server.on('error', (error) => logger.error('the server could not accept a connection', error));
      resolve();
    });
  });
}

/** `http://host:port` (`https://` with TLS), with the port actually bound. */
function serverUrl(server: DrainingServer | DrainingHttpsServer, options: ListenOptions): string {
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return `${options.tls === undefined ? 'http' : 'https'}://${host}:${address.port}`;
}

/**
 * The graceful close: stop accepting; responses still to be sent say `Connection: close`, and Node
 * closes their connections after them; event streams, which never end by themselves, end now and
 * waiting requests are answered (`closeStreams`); a connection that owes nothing is closed once it
 * has been quiet for the grace; whatever is still open after `timeoutMs` is cut, whatever its client does.
 */
async function drain(
  server: DrainingServer | DrainingHttpsServer,
  connections: OwedAnswers,
  sockets: SlotLimiter,
  timeoutMs: number,
  closeStreams: () => void,
): Promise<void> {
  for (const res of connections.unsent()) res.setHeader('connection', 'close');
  closeStreams();
  // Idle connections stay open (draining-server.ts): the quiet sweep below closes them.
  const stopped = new Promise<void>((resolve) => server.stopAccepting(resolve));
  const quiet = (): void => {
    connections.closeQuiet(STOP_GRACE_MS);
    sockets.closeSilent(STOP_GRACE_MS);
  };
  const sweep = setInterval(quiet, 25);
  // Every accepted socket, not only those Node's parser still reads (closeAllConnections): a socket
  // handed out of it (CONNECT) would hold the stop for as long as its client liked.
  const deadline = setTimeout(() => sockets.destroyAll(), timeoutMs);
  quiet();
  try {
    await stopped;
  } finally {
    clearInterval(sweep);
    clearTimeout(deadline);
  }
}

/** A TypeError that says what is wrong with the pair, instead of OpenSSL's code, when they cannot serve. */
function checkTls(tls: { cert: string | Buffer; key: string | Buffer }): void {
  try {
    createSecureContext(tls);
  } catch (error) {
    const code = error instanceof Error && 'code' in error ? String(error.code) : '';
    const why =
      code === 'ERR_OSSL_X509_KEY_VALUES_MISMATCH'
        ? 'the TLS key does not belong to the TLS certificate'
        : `the TLS certificate or key cannot be used (${(error as Error).message})`;
    // A code, as Node's own errors carry, so that the command line shows the message alone.
    throw Object.assign(new TypeError(why, { cause: error }), { code: 'ERR_PETSTORE_TLS' });
  }
  // OpenSSL compares the pair only when their types agree: an RSA certificate with an EC key (or the
  // reverse) passes above, and then every handshake fails. The certificate's own check compares them.
  if (!new X509Certificate(tls.cert).checkPrivateKey(createPrivateKey(tls.key))) {
    throw Object.assign(new TypeError('the TLS key does not belong to the TLS certificate'), {
      code: 'ERR_PETSTORE_TLS',
    });
  }
}

function checkingInterval(headersTimeout: number, requestTimeout: number): number {
  return Math.min(5_000, Math.max(100, Math.floor(Math.min(headersTimeout, requestTimeout) / 4)));
}

/** Nothing to do about an error of a TLS socket handed out: it is destroyed with it, and its holder sees it close. */
function ignoreResetOfHandedOut(): void {}
