/**
 * A gate in front of s3rver that checks every request's Signature V4 as S3 does, since s3rver 3.7.1
 * accepts unsigned and wrongly signed V4 requests. Written apart from src/…/sigv4.ts (its own
 * canonicalisation, from the request as it arrives), and held to AWS's published example in
 * replication-s3.test.ts. A request that passes is forwarded to s3rver unchanged.
 */
import { createHash, createHmac } from 'node:crypto';
import { createServer, request, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ArrivedRequest {
  method: string;
  /** The request target as sent: path and query, still percent-encoded. */
  url: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

const sha = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');
const mac = (key: string | Buffer, data: string): Buffer => createHmac('sha256', key).update(data).digest();
const strict = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

/** Why `req` fails Signature V4 under `secret`, or undefined when it is signed right. `now` bounds the clock skew (15 minutes). */
export function signatureProblem(
  req: ArrivedRequest,
  keys: Record<string, string>,
  now: Date | undefined,
): string | undefined {
  const auth =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/([0-9]{8})\/([^/]+)\/s3\/aws4_request, ?SignedHeaders=([a-z0-9;-]+), ?Signature=([0-9a-f]{64})$/.exec(
      String(req.headers.authorization ?? ''),
    );
  if (auth === null) return 'no Signature V4 Authorization header';
  const [, keyId, day, region, signedHeaders, given] = auth as unknown as string[];
  const secret = keys[keyId as string];
  if (secret === undefined) return 'unknown access key';
  const date = String(req.headers['x-amz-date'] ?? '');
  if (!date.startsWith(day as string)) return "x-amz-date is not the credential's day";
  if (now !== undefined) {
    const at = Date.parse(
      `${date.slice(0, 4)}-${date.slice(4, 6)}-${date.slice(6, 8)}T${date.slice(9, 11)}:${date.slice(11, 13)}:${date.slice(13, 15)}Z`,
    );
    if (!(Math.abs(now.getTime() - at) <= 15 * 60_000)) return 'x-amz-date is too far from now';
  }
  const names = (signedHeaders as string).split(';');
  if (!names.includes('host') || !names.includes('x-amz-content-sha256') || !names.includes('x-amz-date'))
    return 'host, x-amz-content-sha256 and x-amz-date must be signed';
  if ([...names].sort().join(';') !== signedHeaders) return 'SignedHeaders not sorted';
  const payload = String(req.headers['x-amz-content-sha256'] ?? '');
  if (payload !== sha(req.body)) return "x-amz-content-sha256 is not the body's hash";
  const [path = '', rawQuery = ''] = req.url.split('?', 2);
  const query =
    rawQuery === ''
      ? ''
      : rawQuery
          .split('&')
          .map((pair) => {
            const [k = '', v = ''] = pair.split('=', 2);
            return [strict(decodeURIComponent(k)), strict(decodeURIComponent(v))];
          })
          .sort((a, b) =>
            a[0] === b[0]
              ? (a[1] as string) < (b[1] as string)
                ? -1
                : 1
              : (a[0] as string) < (b[0] as string)
                ? -1
                : 1,
          )
          .map(([k, v]) => `${k}=${v}`)
          .join('&');
  const headerLines = names
    .map(
      (name) =>
        `${name}:${String(req.headers[name] ?? '')
          .trim()
          .replace(/ +/g, ' ')}\n`,
    )
    .join('');
  const canonical = `${req.method}\n${path}\n${query}\n${headerLines}\n${signedHeaders}\n${payload}`;
  const toSign = `AWS4-HMAC-SHA256\n${date}\n${day}/${region}/s3/aws4_request\n${sha(canonical)}`;
  const key = mac(mac(mac(mac(`AWS4${secret}`, day as string), region as string), 's3'), 'aws4_request');
  return createHmac('sha256', key).update(toSign).digest('hex') === given ? undefined : 'SignatureDoesNotMatch';
}

export interface Gate {
  url: string;
  verified: number;
  refused: string[];
  /** Requests by method, as they passed. */
  methods: Record<string, number>;
  close(): Promise<void>;
}

/** A gate on 127.0.0.1:0 that verifies with `keys` (access key id → secret) and forwards to `upstream`. */
export async function startGate(upstream: URL, keys: Record<string, string>): Promise<Gate> {
  const gate: Gate = { url: '', verified: 0, refused: [], methods: {}, close: async () => {} };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const problem = signatureProblem(
        { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body },
        keys,
        new Date(),
      );
      if (problem !== undefined) {
        gate.refused.push(`${req.method} ${req.url}: ${problem}`);
        res
          .writeHead(403, { 'content-type': 'application/xml' })
          .end(
            `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SignatureDoesNotMatch</Code><Message>${problem}</Message></Error>`,
          );
        return;
      }
      gate.verified++;
      gate.methods[req.method ?? ''] = (gate.methods[req.method ?? ''] ?? 0) + 1;
      const forward = request(
        { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.writeHead(502).end());
      forward.end(body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  gate.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  gate.close = () =>
    new Promise((r) => {
      server.closeAllConnections();
      server.close(() => r());
    });
  return gate;
}
