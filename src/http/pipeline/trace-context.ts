/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): a `traceparent` of version 00 is
 * `00-<trace-id>-<parent-id>-<flags>`, lower-case hex of 32, 16 and 2 digits, with neither id all
 * zeros. A later version (any but ff, which is invalid) is read as the spec says: the fields of
 * version 00 from its first 55 characters, and after them nothing or a `-` and fields this server
 * does not know, left unread. Anything else (upper case, a header given twice, which Node joins with
 * a comma) is not a trace context here: it is ignored, never an error, and nothing of it is logged.
 */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}(-|$)/;
const ZERO_TRACE_ID = '0'.repeat(32);
const ZERO_PARENT_ID = '0'.repeat(16);

export interface TraceContext {
  traceId: string;
  /** The caller's span (the header's parent-id): this server makes no spans of its own. */
  spanId: string;
}

export function traceContext(header: unknown): TraceContext | undefined {
  if (typeof header !== 'string') return undefined;
  const match = TRACEPARENT.exec(header);
  if (match === null) return undefined;
  const [, version, traceId, spanId, more] = match as unknown as [string, string, string, string, string];
  // Version 00 has nothing after the flags; ff is no version.
  if (version === 'ff' || (version === '00' && more !== '')) return undefined;
  if (traceId === ZERO_TRACE_ID || spanId === ZERO_PARENT_ID) return undefined;
  return { traceId, spanId };
}
