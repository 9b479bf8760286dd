/** The `code` of a Node system error (`ENOENT`, `EEXIST`…), so that catches can be narrow. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}

/** Where a failure that no caller waits on goes by default: a process warning on stderr. */
export function reportToStderr(error: unknown): void {
  process.emitWarning(error instanceof Error ? error : String(error), 'PetStoreWarning');
}
