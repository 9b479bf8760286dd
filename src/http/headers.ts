import type { IncomingMessage } from 'node:http';

/**
 * How many times a header was sent. Node keeps only the first `Authorization` or `Content-Type` and
 * drops the rest silently; a request that sends two is ambiguous and must be refused instead.
 */
export function headerCount(req: IncomingMessage, lowerCaseName: string): number {
  const raw = req.rawHeaders;
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === lowerCaseName.length && name.toLowerCase() === lowerCaseName) count++;
  }
  return count;
}
