import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { ReplicationError, type Destination, type FailureReason } from './destination.js';
import { checkedKey, checkedPrefix } from './object-key.js';
import { amzDate, authorization, payloadHash, uriEncodePath, type Credentials } from './sigv4.js';

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
  /** AWS_ENDPOINT_URL (path-style requests: MinIO, R2, B2, Ceph); without it AWS's virtual-hosted one for the region. */
  endpoint: URL | undefined;
  region: string;
}

/** How long one request may take before the round fails ('timeout'). */
const REQUEST_TIMEOUT_MS = 10_000;

/**
 * An S3-compatible bucket as a destination: single-part PUT, GET, LIST (v2) and DELETE, each signed
 * with Signature V4 (sigv4.ts), over HTTPS or HTTP. The round asks one thing at a time, so at most
 * one request is in flight. Errors say the HTTP status and S3's error code, never a credential.
 */
export class S3Destination implements Destination {
  readonly name: string;
  readonly #location: S3Location;
  readonly #credentials: Credentials;

  constructor(location: S3Location, credentials: Credentials) {
    this.#location = location;
    this.#credentials = credentials;
    this.name = `s3://${location.bucket}/${location.prefix}${location.endpoint === undefined ? '' : ` at ${location.endpoint.origin}`}`;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.#send('PUT', checkedKey(key), [], bytes, [200]);
  }

  async get(key: string): Promise<Buffer | undefined> {
    const response = await this.#send('GET', checkedKey(key), [], undefined, [200, 404]);
    if (response.status === 200) return response.body;
    // A missing key is no object; a missing bucket is a destination that cannot be used.
    if (/<Code>NoSuchBucket<\/Code>/.test(response.body.toString('utf8'))) throw s3Error(this.name, 'GET', response);
    return undefined;
  }

  async list(prefix: string): Promise<string[]> {
    checkedPrefix(prefix);
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const query: Array<[string, string]> = [['list-type', '2'], ['prefix', this.#location.prefix + prefix]];
      if (token !== undefined) query.push(['continuation-token', token]);
      const text = (await this.#send('GET', undefined, query, undefined, [200])).body.toString('utf8');
      for (const match of text.matchAll(/<Key>([^<]*)<\/Key>/g)) keys.push(this.#keyOf(unescapeXml(match[1] as string)));
      token = /<IsTruncated>true<\/IsTruncated>/.test(text) ? unescapeXml(/<NextContinuationToken>([^<]*)</.exec(text)?.[1] ?? '') : undefined;
    } while (token !== undefined && token !== '');
    return keys.sort();
  }

  /** A listed object's key below the prefix, refused when it is not one. */
  #keyOf(listed: string): string {
    const { prefix } = this.#location;
    if (!listed.startsWith(prefix)) throw new ReplicationError('damaged', `${JSON.stringify(listed)} names no object under ${this.name}; refused`);
    return checkedKey(listed.slice(prefix.length));
  }

  async delete(key: string): Promise<void> {
    await this.#send('DELETE', checkedKey(key), [], undefined, [200, 204, 404]);
  }

  async #send(method: string, key: string | undefined, query: Array<[string, string]>, body: Uint8Array | undefined, expected: number[]): Promise<{ status: number; body: Buffer }> {
    const { bucket, prefix, endpoint, region } = this.#location;
    const base = endpoint ?? new URL(`https://${bucket}.s3.${region}.amazonaws.com`);
    const objectPath = key === undefined ? '/' : `/${prefix}${key}`;
    const path = uriEncodePath(endpoint === undefined ? objectPath : `${endpoint.pathname.replace(/\/$/, '')}/${bucket}${key === undefined ? '' : objectPath}`);
    const headers: Record<string, string> = {
      host: base.host, 'x-amz-content-sha256': payloadHash(body ?? ''), 'x-amz-date': amzDate(new Date()),
    };
    if (this.#credentials.sessionToken !== undefined) headers['x-amz-security-token'] = this.#credentials.sessionToken;
    headers['authorization'] = authorization({ method, path, query, headers, region, service: 's3', amzDate: headers['x-amz-date'] as string }, this.#credentials);
    if (body !== undefined) headers['content-length'] = String(body.length);
    const search = query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
    const send = base.protocol === 'http:' ? httpRequest : httpsRequest;
    const response = await new Promise<{ status: number; body: Buffer }>((resolve, reject) => {
      const req = send({ protocol: base.protocol, hostname: base.hostname, port: base.port, method, path: search === '' ? path : `${path}?${search}`, headers, timeout: REQUEST_TIMEOUT_MS }, (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new ReplicationError('timeout', `${this.name}: ${method} took longer than ${REQUEST_TIMEOUT_MS} ms`)));
      req.on('error', (error: Error & { code?: string }) => reject(error instanceof ReplicationError ? error : new ReplicationError('unreachable', `${this.name}: ${error.code ?? error.message}`)));
      req.end(body);
    });
    if (!expected.includes(response.status)) throw s3Error(this.name, method, response);
    return response;
  }
}

/** An answer S3 refused with: its status, and the code and message of its XML error body. */
function s3Error(name: string, method: string, { status, body }: { status: number; body: Buffer }): ReplicationError {
  const text = body.toString('utf8');
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? '';
  const reason: FailureReason = status === 403 || status === 401 ? 'refused' : status === 404 ? 'not_found' : code === 'EntityTooLarge' || code === 'QuotaExceeded' ? 'full' : status >= 500 ? 'unreachable' : 'other';
  const advice = code === 'NoSuchBucket' ? ': the bucket does not exist; create it, or check the bucket and AWS_ENDPOINT_URL'
    : reason === 'refused' ? ': the credentials were refused; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION, and what the key may do' : '';
  return new ReplicationError(reason, `${name}: ${method} answered ${status}${code === '' ? '' : ` ${code}`}${advice}`);
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#[0-9]+|#x[0-9a-fA-F]+);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number(entity.slice(1)));
    return { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' }[entity] as string;
  });
}
