/** The fixed set of Error `code` values this service answers with (documented in the README and OpenAPI). */
export const ERROR_CODES = [
  'invalid_request',
  'unauthorized',
  'not_found',
  'method_not_allowed',
  'request_timeout',
  'payload_too_large',
  'unsupported_media_type',
  'expectation_failed',
  'too_many_requests',
  'headers_too_large',
  'internal_error',
  'unavailable',
  'http_version_not_supported',
  'request_in_progress',
  'idempotency_key_reused',
  'too_many_idempotency_keys',
  'insufficient_scope',
  'rate_limited',
  'too_many_streams',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * The one error type of the service: everything that should reach a client as an Error body is
 * thrown or returned as an HttpError; `respond.ts` is the single place that turns it into a response.
 */
export class HttpError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers that belong to this error (`Allow`, `Retry-After`, `WWW-Authenticate`). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    headers: Record<string, string> = {},
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'HttpError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

/** The 503 of a request that arrives, or a stream or wait still being opened, while the service stops. */
export const stoppingError = (): HttpError =>
  new HttpError(503, 'unavailable', 'the server is stopping; try again shortly', { 'retry-after': '1' });
