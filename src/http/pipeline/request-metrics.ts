import { Counter, type CounterSeries } from '../../lib/metrics/counter.js';
import { Histogram, type HistogramSeries } from '../../lib/metrics/histogram.js';
import type { MetricsRegistry } from '../../lib/metrics/registry.js';
import { IdempotencyKeyLimitError, StoreUnavailableError } from '../../store/store.js';
import { AUTH_FAILURES, AuthenticationError } from '../access/authenticate.js';
import { HeldLimitError, KeyHeldLimitError } from '../feed/held-refusals.js';
import { HttpError } from '../http-error.js';
import type { Mount } from '../mount.js';
import type { Reply } from '../respond.js';
import { METHODS } from '../router.js';
import { ROUTES } from '../routes.js';

/** Seconds; four at or below a millisecond, where this server's answers lie, up to 10 s. */
export const REQUEST_DURATION_BUCKETS = [
  0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
];
/** The label values that stand for every unknown path and every method the router does not know. */
export const UNMATCHED_ROUTE = 'unmatched';
export const OTHER_METHOD = '_OTHER';
/**
 * Why an answer was a refusal by a limit, named after the limit: --body-limit, --auth-failure-limit,
 * --idempotency-key-limit, --rate-limit, --max-streams, --max-streams-per-key, the store's.
 */
export const REFUSALS = [
  'body_limit',
  'auth_failure_limit',
  'idempotency_key_limit',
  'rate_limit',
  'max_streams',
  'max_streams_per_key',
  'store_unavailable',
] as const;
/**
 * Why a request was refused at authentication or authorisation: AUTH_FAILURES, or a key without the scope its operation
 * needs (403).
 */
const REFUSED_KEYS = [...AUTH_FAILURES, 'insufficient_scope'] as const;
type RefusedKey = (typeof REFUSED_KEYS)[number];
type Refusal = (typeof REFUSALS)[number];

const METHOD_LABELS: readonly string[] = [...METHODS, OTHER_METHOD];

/**
 * What the HTTP layer measures of each answered request. Every label value comes from a fixed set:
 * the route table's templates (an unknown path is UNMATCHED_ROUTE, never the path), the router's
 * methods (else OTHER_METHOD) and the statuses this service answers with. A series is resolved once
 * per route, method and status and kept under a number, so observing a request allocates nothing.
 */
export class RequestMetrics {
  readonly #duration: Histogram;
  /** Series by (route index × methods + method index) × 1000 + status. */
  readonly #series = new Map<number, HistogramSeries>();
  /** Route index by the router's pattern (`/v1/pets/:petId`); the last index is UNMATCHED_ROUTE. */
  readonly #routes = new Map<string, number>();
  readonly #routeLabels: string[] = [];
  readonly #replays: CounterSeries;
  readonly #authFailures: Readonly<Record<RefusedKey, CounterSeries>>;
  readonly #refused: Readonly<Record<Refusal, CounterSeries>>;

  constructor(registry: MetricsRegistry, mount: Mount) {
    for (const route of ROUTES) {
      const pattern = mount.root + route.path;
      if (this.#routes.has(pattern)) continue;
      this.#routes.set(pattern, this.#routeLabels.length);
      this.#routeLabels.push(pattern.replace(/:(\w+)/g, '{$1}'));
    }
    this.#routeLabels.push(UNMATCHED_ROUTE);
    this.#duration = registry.add(
      new Histogram(
        'http_server_request_duration_seconds',
        'Time from a request reaching the service to its answer being handed to Node, by method, route template and ' +
          'status',
        ['http_request_method', 'http_route', 'http_response_status_code'],
        REQUEST_DURATION_BUCKETS,
      ),
    );
    this.#replays = registry
      .add(
        new Counter(
          'petstore_idempotent_replays_total',
          'Creates answered with the pet of an earlier create with the same Idempotency-Key (Idempotent-Replayed: ' +
            'true), storing nothing',
        ),
      )
      .labels();
    const auth = registry.add(
      new Counter(
        'petstore_auth_failures_total',
        'Requests refused at authentication or for a missing scope, by reason',
        ['reason'],
      ),
    );
    this.#authFailures = Object.fromEntries(REFUSED_KEYS.map((reason) => [reason, auth.labels(reason)])) as Record<
      RefusedKey,
      CounterSeries
    >;
    const refused = registry.add(
      new Counter('petstore_http_refused_total', 'Requests refused by a limit (413, 429, 503), by the limit', [
        'reason',
      ]),
    );
    this.#refused = Object.fromEntries(REFUSALS.map((reason) => [reason, refused.labels(reason)])) as Record<
      Refusal,
      CounterSeries
    >;
  }

  /**
   * An answered request: the pattern its path matched (undefined: none), its method, its reply, and its time in
   * nanoseconds.
   */
  observe(route: string | undefined, method: string, reply: Reply, nanos: number): void {
    const routeIndex =
      route === undefined ? this.#routeLabels.length - 1 : (this.#routes.get(route) ?? this.#routeLabels.length - 1);
    let methodIndex = METHODS.indexOf(method as (typeof METHODS)[number]);
    if (methodIndex === -1) methodIndex = METHODS.length;
    const key = (routeIndex * METHOD_LABELS.length + methodIndex) * 1000 + reply.status;
    let series = this.#series.get(key);
    if (series === undefined) {
      series = this.#duration.labels(
        METHOD_LABELS[methodIndex] as string,
        this.#routeLabels[routeIndex] as string,
        String(reply.status),
      );
      this.#series.set(key, series);
    }
    series.observe(nanos / 1e9);
    if (reply.status === 201 && reply.headers?.['idempotent-replayed'] !== undefined) this.#replays.inc();
  }

  /** A request that failed with `error`: counted by why, when it is a refused authentication or a limit. */
  failed(error: unknown): void {
    if (error instanceof AuthenticationError) {
      this.#authFailures[error.reason].inc();
      if (error.reason === 'address_blocked') this.#refused.auth_failure_limit.inc();
    } else if (error instanceof HeldLimitError) {
      this.#refused.max_streams.inc();
    } else if (error instanceof KeyHeldLimitError) {
      this.#refused.max_streams_per_key.inc();
    } else if (error instanceof HttpError) {
      if (error.status === 413) this.#refused.body_limit.inc();
      else if (error.code === 'rate_limited') this.#refused.rate_limit.inc();
      else if (error.code === 'insufficient_scope') this.#authFailures.insufficient_scope.inc();
    } else if (error instanceof IdempotencyKeyLimitError) {
      this.#refused.idempotency_key_limit.inc();
    } else if (error instanceof StoreUnavailableError) {
      this.#refused.store_unavailable.inc();
    }
  }
}
