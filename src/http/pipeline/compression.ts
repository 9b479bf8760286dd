import { gzipSync } from 'node:zlib';

/**
 * Answers shorter than this go out as they are: gzip saves a few hundred bytes at most there, and its
 * CPU and header would outweigh them (bench/results.md, "Compression").
 */
export const COMPRESS_MIN_BYTES = 1024;

/**
 * gzip, the one coding offered: br saves little more on these answers (bench/results.md,
 * "Compression"). The window is no larger than the answer needs: a page of 20 pets then takes a
 * 2 KiB window instead of 32 KiB, and zlib allocates and clears that much less for every answer.
 */
export function gzip(body: string | Uint8Array, length: number): Buffer {
  return gzipSync(body, { windowBits: Math.min(15, Math.max(9, Math.ceil(Math.log2(length + 262)))) });
}

const QVALUE = /^(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)$/;

/**
 * Whether an answer of `length` bytes goes out gzip-coded, by the request's Accept-Encoding (RFC 9110
 * §12.5.3, q-values honoured): when gzip is acceptable, for answers of COMPRESS_MIN_BYTES or more, and
 * not when identity is weighted above it; smaller answers too when identity is refused (`identity;q=0`,
 * or `*;q=0` without identity). When neither is acceptable the answer goes out as it is, which RFC 9110
 * prefers to a 406. An item that does not parse is ignored.
 */
export function acceptsGzip(acceptEncoding: string, length: number): boolean {
  let gzipQ = -1;
  let identityQ = -1;
  let starQ = -1;
  for (const item of acceptEncoding.split(',')) {
    const semicolon = item.indexOf(';');
    const coding = (semicolon === -1 ? item : item.slice(0, semicolon)).trim().toLowerCase();
    const q = semicolon === -1 ? 1 : weight(item.slice(semicolon + 1));
    if (q === undefined) continue;
    if (coding === 'gzip' || coding === 'x-gzip') gzipQ = Math.max(gzipQ, q);
    else if (coding === 'identity') identityQ = Math.max(identityQ, q);
    else if (coding === '*') starQ = Math.max(starQ, q);
  }
  const gzipWeight = gzipQ !== -1 ? gzipQ : Math.max(starQ, 0);
  // Identity is acceptable unless refused; it has a weight to compare only when given one, itself or by `*`.
  const identityWeight = identityQ !== -1 ? identityQ : starQ !== -1 ? starQ : undefined;
  if (gzipWeight === 0) return false;
  if (identityWeight === 0) return true;
  return length >= COMPRESS_MIN_BYTES && (identityWeight === undefined || gzipWeight >= identityWeight);
}

/** The q of a coding's parameters (`q=0.5`), 1 without one; undefined when malformed. */
function weight(parameters: string): number | undefined {
  let q = 1;
  for (const parameter of parameters.split(';')) {
    const eq = parameter.indexOf('=');
    const name = (eq === -1 ? parameter : parameter.slice(0, eq)).trim().toLowerCase();
    if (name !== 'q') continue;
    const value = eq === -1 ? '' : parameter.slice(eq + 1).trim();
    if (!QVALUE.test(value)) return undefined;
    q = Number(value);
  }
  return q;
}
