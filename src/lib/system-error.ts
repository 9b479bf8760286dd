/** The `code` of a Node system error (`ENOENT`, `EEXIST`…), so that catches can be narrow. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** Where a failure that no caller waits on goes by default: a process warning on stderr. */
export function reportToStderr(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), 'PetStoreWarning');
}

/**
 * An error with a code (ECONNREFUSED, a driver's CONNECTION_CLOSED, PostgreSQL's 57P01), itself or as the cause of
 * the error that wraps it, as `message (code)` for a log line: the stack of a service that went away shows only a
 * driver's internals. Others are returned as they are, to be logged with their stack.
 */
export function withoutStack(error: unknown): unknown {
  const code = errorCode(error) ?? (error instanceof Error ? errorCode(error.cause) : undefined);
  return code === undefined ? error : `${(error as Error).message} (${code})`;
}

/**
 * An expected failure (a store that cannot be used, answered 503) as one line: `message (code)` with the code of it
 * or its cause, else its message alone. Its stack would only repeat, once a request, where the store noticed.
 */
export function oneLine(error: Error): string {
  const line = withoutStack(error);
  return typeof line === 'string' ? line : error.message;
}
