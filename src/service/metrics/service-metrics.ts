/**
 * The metrics of one service instance. Loaded only when metrics are on (`metrics: true`, or a metrics
 * port), and with it the metric families, the event-loop monitor and perf_hooks.
 */
import type { Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { Server as TlsServer } from 'node:tls';
import { CLOSED_FOR_ROOM, type SlotLimiter } from '../../http/connections/slot-limiter.js';
import type { OwedAnswers } from '../../http/connections/owed-answers.js';
import { ENDINGS } from '../../http/connections/send-watch.js';
import type { Feed } from '../../http/feed/feed.js';
import type { Mount } from '../../http/mount.js';
import { RequestMetrics } from '../../http/pipeline/request-metrics.js';
import { CollectedMetric, single } from '../../lib/metrics/collected.js';
import { Counter } from '../../lib/metrics/counter.js';
import { MetricsRegistry } from '../../lib/metrics/registry.js';
import type { Logger } from '../../lib/logger.js';
import type { PetStore } from '../../store/store.js';
import { listenMetrics, type MetricsListener } from './metrics-listener.js';
import { ProcessMetrics } from './process-metrics.js';
import { addStoreMetrics } from './store-metrics.js';
import { addReplicationMetrics } from './replication-metrics.js';
import { addCertificateMetrics, type CertificateState } from './certificate-metrics.js';
import type { Replicator } from '../../store/file/replication/replicator.js';
import { addWebhookMetrics } from './webhook-metrics.js';
import type { Webhooks } from '../webhooks.js';

/**
 * A registry of its own (two services in one process count apart) with what the HTTP layer
 * measures, what the store reports, the process, and with `listen` its server's connections.
 */
export class ServiceMetrics {
  readonly #registry = new MetricsRegistry();
  #process: ProcessMetrics | undefined;

  /**
   * Adds the service's families (its requests on `mount`'s routes, its store, its feed, the process) and returns what
   * the app measures with.
   */
  attach(store: PetStore, mount: Mount, feed: Feed): RequestMetrics {
    const requests = new RequestMetrics(this.#registry, mount);
    addStoreMetrics(this.#registry, store);
    this.#registry.add(
      new CollectedMetric(
        'gauge',
        'petstore_http_held_requests',
        'Event streams and requests waiting for new pets (wait) open now, by kind',
        ['kind'],
        () => {
          const { streams, waiting } = feed.held();
          return [
            [['stream'], streams],
            [['wait'], waiting],
          ];
        },
      ),
    );
    this.#registry.add(
      new CollectedMetric(
        'gauge',
        'petstore_http_max_held_requests',
        'Event streams and waiting requests held at most (--max-streams)',
        [],
        () => single(feed.maxHeld),
      ),
    );
    this.#process = new ProcessMetrics(this.#registry);
    return requests;
  }

  /**
   * Adds the families of the server `listen` runs: the connections open, their limit, those closed or refused at it.
   */
  watchServer(server: Server | HttpsServer, sockets: SlotLimiter, connections: OwedAnswers): void {
    const open = (): Promise<number> =>
      new Promise((resolve, reject) =>
        server.getConnections((error, count) => (error === null ? resolve(count) : reject(error))),
      );
    this.#registry.add(
      new CollectedMetric('gauge', 'petstore_http_open_connections', 'Connections open to the API now', [], async () =>
        single(await open()),
      ),
    );
    this.#registry.add(
      new CollectedMetric(
        'gauge',
        'petstore_http_max_connections',
        'Connections open to the API at most (--max-connections)',
        [],
        () => single(sockets.max),
      ),
    );
    this.#registry.add(
      new CollectedMetric(
        'counter',
        'petstore_http_evicted_connections_total',
        'Connections without a request in progress closed at --max-connections to make room for a new one',
        [],
        () => single(sockets.evicted),
      ),
    );
    this.#registry.add(
      new CollectedMetric(
        'counter',
        'petstore_http_refused_connections_total',
        'Connections closed at once because --max-connections were open and none could be closed for room',
        [],
        () => single(sockets.refused),
      ),
    );
    this.#registry.add(
      new CollectedMetric(
        'counter',
        'petstore_http_ended_connections_total',
        'Connections the server ended for answers their clients did not take: no progress for --send-timeout, ' +
          'more than 64 requests unanswered, or the most unsent bytes while 64 MiB waited in all',
        ['reason'],
        () => ENDINGS.map((why) => [[why], connections.ended[why]]),
      ),
    );
    if (server instanceof TlsServer) {
      const failures = this.#registry.add(
        new Counter('petstore_tls_handshake_failures_total', 'TLS handshakes that failed, by reason', ['reason']),
      );
      const series = Object.fromEntries(HANDSHAKE_FAILURES.map((reason) => [reason, failures.labels(reason)]));
      server.on('tlsClientError', (error: Error) => {
        // Closed at --max-connections in its handshake: counted among the evicted connections, not here.
        if (!('code' in error && error.code === CLOSED_FOR_ROOM)) series[handshakeFailure(error)]?.inc();
      });
    }
  }

  /** Adds the replication families (replication.ts). */
  watchReplication(replicator: Replicator): void {
    addReplicationMetrics(this.#registry, replicator);
  }

  /** Adds the webhook families (webhook-metrics.ts). */
  watchWebhooks(webhooks: Webhooks): void {
    addWebhookMetrics(this.#registry, webhooks);
  }

  /** Adds the TLS certificate families (certificate-metrics.ts). */
  watchCertificates(certificates: CertificateState): void {
    addCertificateMetrics(this.#registry, certificates);
  }

  /** Serves `GET /metrics` on a listener of its own (metrics-listener.ts). */
  serve(port: number, host: string, logger: Logger): Promise<MetricsListener> {
    return listenMetrics(port, host, () => this.expose(), logger);
  }

  /** Every family in the Prometheus text format 0.0.4. */
  expose(): Promise<string> {
    return this.#registry.expose();
  }

  /** Stops the event-loop monitor. */
  close(): void {
    this.#process?.close();
  }

  /**
   * Adds the count of plain HTTP requests answered 400 on the HTTPS port (plain-http-on-tls.ts); returns what counts
   * one.
   */
  countPlainHttp(): () => void {
    const plain = this.#registry
      .add(new Counter('petstore_tls_plain_http_total', 'Plain HTTP requests sent to the HTTPS port, answered 400'))
      .labels();
    return () => plain.inc();
  }
}

const HANDSHAKE_FAILURES = ['timeout', 'closed', 'plain_http', 'refused_by_client', 'protocol', 'other'] as const;

/**
 * A few reasons, never the message: the client went (reset), was too slow (--headers-timeout),
 * spoke plain HTTP, refused the certificate with an alert, or offered nothing the server could agree on.
 */
function handshakeFailure(error: Error): (typeof HANDSHAKE_FAILURES)[number] {
  const code = 'code' in error ? String(error.code) : '';
  if (code === 'ERR_TLS_HANDSHAKE_TIMEOUT') return 'timeout';
  if (code === 'ECONNRESET' || code === 'EPIPE') return 'closed';
  if (code === 'ERR_SSL_HTTP_REQUEST') return 'plain_http';
  if (code.startsWith('ERR_SSL_') && code.includes('ALERT')) return 'refused_by_client';
  if (code.startsWith('ERR_SSL_')) return 'protocol';
  return 'other';
}
