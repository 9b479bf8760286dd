/** The `code` of a Node system error (`ENOENT`, `EEXIST`…), so that catches can be narrow. */
export function errorCode(error: unknown): string | undefined {
  return error instanceof Error && 'code' in error && typeof error.code === 'string' ? error.code : undefined;
}
