import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { boundedRequest, DEFAULT_REQUEST_LIMITS, type Answer, type RequestLimits } from './bounded-request.js';
import { ReplicationError, type Destination, type FailureReason } from './destination.js';
import { checkedKey, checkedPrefix } from './object-key.js';
import { amzDate, authorization, payloadHash, uriEncodePath, type Credentials } from './sigv4.js';

export interface S3Location {
  bucket: string;
  /** '' or ending in '/'. */
  prefix: string;
  /**
   * AWS_ENDPOINT_URL (path-style requests: MinIO, R2, B2, Ceph); without it AWS's virtual-hosted one for the region.
   */
  endpoint: URL | undefined;
  region: string;
}

// Pages of one LIST at most (ten million keys at S3's 1,000 a page): past it, or on a token seen before, it stops.
const MAX_LIST_PAGES = 10_000;

/**
 * An S3-compatible bucket as a destination: single-part PUT, GET, LIST (v2) and DELETE, each signed
 * with Signature V4 (sigv4.ts), over HTTPS or HTTP. The round asks one thing at a time, so at most
 * one request is in flight. Errors say the HTTP status and S3's error code, never a credential.
 */
export class S3Destination implements Destination {
  readonly name: string;
  readonly #location: S3Location;
  readonly #credentials: Credentials;
  readonly #limits: RequestLimits;
  readonly #maxListPages: number;

  constructor(
    location: S3Location,
    credentials: Credentials,
    limits = DEFAULT_REQUEST_LIMITS,
    maxListPages = MAX_LIST_PAGES,
  ) {
    this.#location = location;
    this.#credentials = credentials;
    this.#limits = limits;
    this.#maxListPages = maxListPages;
    const at = location.endpoint === undefined ? '' : ` at ${location.endpoint.origin}`;
    this.name = `s3://${location.bucket}/${location.prefix}${at}`;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    await this.#send('PUT', checkedKey(key), [], bytes, [200]);
  }

  async get(key: string, size?: number): Promise<Buffer | undefined> {
    const response = await this.#send('GET', checkedKey(key), [], undefined, [200, 404], size);
    if (response.status === 200) return response.body;
    // A missing key is no object; a missing bucket is a destination that cannot be used.
    if (/<Code>NoSuchBucket<\/Code>/.test(response.body.toString('utf8'))) throw s3Error(this.name, 'GET', response);
    return undefined;
  }

  async list(prefix: string): Promise<string[]> {
    checkedPrefix(prefix);
    const keys: string[] = [];
    const tokens = new Set<string>();
    let token: string | undefined;
    do {
      if (tokens.size >= this.#maxListPages) {
        throw new ReplicationError('other', `${this.name}: LIST ${prefix} ran past ${this.#maxListPages} pages`);
      }
      const query: Array<[string, string]> = [
        ['list-type', '2'],
        ['prefix', this.#location.prefix + prefix],
      ];
      if (token !== undefined) query.push(['continuation-token', token]);
      const text = (await this.#send('GET', undefined, query, undefined, [200])).body.toString('utf8');
      for (const match of text.matchAll(/<Key>([^<]*)<\/Key>/g)) {
        keys.push(this.#keyOf(unescapeXml(match[1] as string)));
      }
      token = nextToken(text);
      if (token !== undefined && tokens.has(token)) {
        const said = `${this.name}: LIST ${prefix} answered a continuation token it gave before; stopped`;
        throw new ReplicationError('other', said);
      }
      if (token !== undefined) tokens.add(token);
    } while (token !== undefined);
    return keys.sort();
  }

  /** A listed object's key below the prefix, refused when it is not one. */
  #keyOf(listed: string): string {
    const { prefix } = this.#location;
    if (!listed.startsWith(prefix)) {
      throw new ReplicationError('damaged', `${JSON.stringify(listed)} names no object under ${this.name}; refused`);
    }
    return checkedKey(listed.slice(prefix.length));
  }

  async delete(key: string): Promise<void> {
    await this.#send('DELETE', checkedKey(key), [], undefined, [200, 204, 404]);
  }

  async #send(
    method: string,
    key: string | undefined,
    query: Array<[string, string]>,
    body: Uint8Array | undefined,
    expected: number[],
    size?: number,
  ): Promise<Answer> {
    const { bucket, prefix, endpoint, region } = this.#location;
    const base = endpoint ?? new URL(`https://${bucket}.s3.${region}.amazonaws.com`);
    const objectPath = key === undefined ? '/' : `/${prefix}${key}`;
    const path = uriEncodePath(
      endpoint === undefined
        ? objectPath
        : `${endpoint.pathname.replace(/\/$/, '')}/${bucket}${key === undefined ? '' : objectPath}`,
    );
    const headers: Record<string, string> = {
      host: base.host,
      'x-amz-content-sha256': payloadHash(body ?? ''),
      'x-amz-date': amzDate(new Date()),
    };
    if (this.#credentials.sessionToken !== undefined) headers['x-amz-security-token'] = this.#credentials.sessionToken;
    headers.authorization = authorization(
      { method, path, query, headers, region, service: 's3', amzDate: headers['x-amz-date'] as string },
      this.#credentials,
    );
    if (body !== undefined) headers['content-length'] = String(body.length);
    const search = query.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&');
    const send = base.protocol === 'http:' ? httpRequest : httpsRequest;
    const target = {
      protocol: base.protocol,
      hostname: base.hostname,
      port: base.port,
      method,
      path: search === '' ? path : `${path}?${search}`,
      headers,
    };
    // An error body or a LIST page is small; an object is the size its position gives, when it gives one.
    const maxBytes = Math.max(size ?? 0, this.#limits.maxBodyBytes);
    const response = await boundedRequest(send, target, body, this.#limits, maxBytes, `${this.name}: ${method}`);
    if (!expected.includes(response.status)) throw s3Error(this.name, method, response);
    return response;
  }
}

/** An answer S3 refused with: its status, and the code and message of its XML error body. */
function s3Error(name: string, method: string, { status, body }: { status: number; body: Buffer }): ReplicationError {
  const text = body.toString('utf8');
  const code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? '';
  const reason: FailureReason =
    status === 403 || status === 401
      ? 'refused'
      : status === 404
        ? 'not_found'
        : code === 'EntityTooLarge' || code === 'QuotaExceeded'
          ? 'full'
          : status >= 500
            ? 'unreachable'
            : 'other';
  const advice =
    code === 'NoSuchBucket'
      ? ': the bucket does not exist; create it, or check the bucket and AWS_ENDPOINT_URL'
      : reason === 'refused'
        ? ': the credentials were refused; check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION, and what ' +
          'the key may do'
        : '';
  return new ReplicationError(reason, `${name}: ${method} answered ${status}${code === '' ? '' : ` ${code}`}${advice}`);
}

/** The next page's token of a LIST answer, undefined when it is the last; a truncated one must give one. */
function nextToken(text: string): string | undefined {
  if (!/<IsTruncated>true<\/IsTruncated>/.test(text)) return undefined;
  const token = unescapeXml(/<NextContinuationToken>([^<]*)</.exec(text)?.[1] ?? '');
  if (token === '') throw new ReplicationError('other', 'a LIST answered a truncated page with no continuation token');
  return token;
}

function unescapeXml(text: string): string {
  return text.replace(/&(lt|gt|quot|apos|amp|#[0-9]+|#x[0-9a-fA-F]+);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number(entity.slice(1)));
    return { lt: '<', gt: '>', quot: '"', apos: "'", amp: '&' }[entity] as string;
  });
}
