import { createHash, createHmac } from 'node:crypto';

/** Credentials of an S3-compatible service: never logged, never in a message. */
export interface Credentials {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string | undefined;
}

export interface RequestToSign {
  method: string;
  /** The path as sent, each segment already URI-encoded (uriEncodePath). */
  path: string;
  /** Query parameters, not encoded. */
  query: ReadonlyArray<readonly [string, string]>;
  /** Header names in lower case; `host` and `x-amz-content-sha256` among them. */
  headers: Readonly<Record<string, string>>;
  region: string;
  service: string;
  /** UTC, as `20130524T000000Z`. */
  amzDate: string;
}

const hex = (bytes: string | Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
const hmac = (key: string | Buffer, text: string): Buffer => createHmac('sha256', key).update(text).digest();

/** RFC 3986 percent-encoding as Signature V4 wants it: every byte but A–Z a–z 0–9 - . _ ~ (and '/' when `slash`). */
export function uriEncode(text: string, slash = false): string {
  let out = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    out +=
      /[A-Za-z0-9\-._~]/.test(c) || (slash && c === '/') ? c : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export const uriEncodePath = (path: string): string => uriEncode(path, true);

/** `20130524T000000Z` for `date`. */
export const amzDate = (date: Date): string =>
  date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.[0-9]{3}/, '');

/** The canonical request (Signature V4, step 1). */
export function canonicalRequest(request: RequestToSign): string {
  const query = request.query
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort((a, b) => (a[0] === b[0] ? (a[1] < b[1] ? -1 : 1) : a[0] < b[0] ? -1 : 1))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const names = Object.keys(request.headers)
    .map((n) => n.toLowerCase())
    .sort();
  const headers = names.map((n) => `${n}:${(request.headers[n] ?? '').trim().replace(/\s+/g, ' ')}\n`).join('');
  return [
    request.method,
    request.path,
    query,
    headers,
    names.join(';'),
    request.headers['x-amz-content-sha256'] ?? hex(''),
  ].join('\n');
}

export const credentialScope = (request: RequestToSign): string =>
  `${request.amzDate.slice(0, 8)}/${request.region}/${request.service}/aws4_request`;

/** The string to sign (step 2). */
export function stringToSign(request: RequestToSign): string {
  return ['AWS4-HMAC-SHA256', request.amzDate, credentialScope(request), hex(canonicalRequest(request))].join('\n');
}

/** The signature (steps 3 and 4): HMAC of the string to sign under the key derived for the day, region and service. */
export function signature(request: RequestToSign, secretAccessKey: string): string {
  const key = hmac(
    hmac(hmac(hmac(`AWS4${secretAccessKey}`, request.amzDate.slice(0, 8)), request.region), request.service),
    'aws4_request',
  );
  return createHmac('sha256', key).update(stringToSign(request)).digest('hex');
}

/** The Authorization header of `request`. */
export function authorization(request: RequestToSign, credentials: Credentials): string {
  const signed = Object.keys(request.headers)
    .map((n) => n.toLowerCase())
    .sort()
    .join(';');
  return (
    `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${credentialScope(request)},SignedHeaders=${signed},` +
    `Signature=${signature(request, credentials.secretAccessKey)}`
  );
}

export const payloadHash = hex;
