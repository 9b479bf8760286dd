/**
 * The metrics of one service instance. Loaded only when metrics are on (`metrics: true`, or a metrics
 * port), and with it the metric families, the event-loop monitor and perf_hooks.
 */
import type { Server } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import type { Feed } from '../http/feed.js';
import type { Mount } from '../http/mount.js';
import { RequestMetrics } from '../http/request-metrics.js';
import { CollectedMetric, single } from '../lib/metrics/collected.js';
import { Counter } from '../lib/metrics/counter.js';
import { MetricsRegistry } from '../lib/metrics/registry.js';
import type { Logger } from '../lib/logger.js';
import type { PetStore } from '../store/store.js';
import { listenMetrics, type MetricsListener } from './metrics-listener.js';
import { ProcessMetrics } from './process-metrics.js';
import { addStoreMetrics } from './store-metrics.js';

/**
 * A registry of its own (two services in one process count apart) with what the HTTP layer
 * measures, what the store reports, the process, and with `listen` its server's connections.
 */
export class ServiceMetrics {
  readonly #registry = new MetricsRegistry();
  #process: ProcessMetrics | undefined;

  /** Adds the service's families (its requests on `mount`'s routes, its store, its feed, the process) and returns what the app measures with. */
  attach(store: PetStore, mount: Mount, feed: Feed): RequestMetrics {
    const requests = new RequestMetrics(this.#registry, mount);
    addStoreMetrics(this.#registry, store);
    this.#registry.add(new CollectedMetric('gauge', 'petstore_http_held_requests', 'Event streams and requests waiting for new pets (wait) open now, by kind', ['kind'], () => {
      const { streams, waiting } = feed.held();
      return [[['stream'], streams], [['wait'], waiting]];
    }));
    this.#registry.add(new CollectedMetric('gauge', 'petstore_http_max_held_requests', 'Event streams and waiting requests held at most (--max-streams)', [], () => single(feed.maxHeld)));
    this.#process = new ProcessMetrics(this.#registry);
    return requests;
  }

  /** Adds the families of the server `listen` runs: the connections open, their limit, those refused at it. */
  watchServer(server: Server | HttpsServer): void {
    const open = (): Promise<number> => new Promise((resolve, reject) => server.getConnections((error, count) => (error === null ? resolve(count) : reject(error))));
    this.#registry.add(new CollectedMetric('gauge', 'petstore_http_open_connections', 'Connections open to the API now', [], async () => single(await open())));
    this.#registry.add(new CollectedMetric('gauge', 'petstore_http_max_connections', 'Connections open to the API at most (--max-connections)', [], () => single(server.maxConnections)));
    const refused = this.#registry.add(new Counter('petstore_http_refused_connections_total', 'Connections closed at once because --max-connections were open')).labels();
    server.on('drop', () => refused.inc());
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

  /** Adds the count of plain HTTP requests answered 400 on the HTTPS port (plain-http-on-tls.ts); returns what counts one. */
  countPlainHttp(): () => void {
    const plain = this.#registry.add(new Counter('petstore_tls_plain_http_total', 'Plain HTTP requests sent to the HTTPS port, answered 400')).labels();
    return () => plain.inc();
  }
}
