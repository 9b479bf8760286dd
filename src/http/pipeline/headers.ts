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
    if (name.length === lowerCaseName.length && sameLetters(name, lowerCaseName)) count++;
  }
  return count;
}

/** `name` equals the lower-case `lower` ignoring ASCII case, without making a lower-case copy per header. */
function sameLetters(name: string, lower: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if ((c >= 0x41 && c <= 0x5a ? c | 0x20 : c) !== lower.charCodeAt(i)) return false; // A–Z folded
  }
  return true;
}
