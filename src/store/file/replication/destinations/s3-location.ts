import { ReplicationError } from './destination.js';
import type { S3Location } from './s3-destination.js';
import type { Credentials } from './sigv4.js';

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * `s3://bucket/prefix` and the conventional AWS_* variables, checked: a malformed URL, a missing
 * credential or an endpoint that is not an http(s) URL refuses the start saying what to set. No
 * message repeats a credential (one written into the URL is refused without being shown).
 */
export function s3Settings(
  raw: string,
  env: NodeJS.ProcessEnv,
  warn: (message: string) => void,
): { location: S3Location; credentials: Credentials } {
  const match = /^s3:\/\/([^/]*)(?:\/(.*))?$/.exec(raw);
  const bucket = match?.[1] ?? '';
  if (bucket.includes('@') || bucket.includes(':'))
    throw new ReplicationError(
      'refused',
      '--replicate-to: an s3:// URL carries no credentials; set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the ' +
        'environment',
    );
  if (!BUCKET.test(bucket))
    throw new ReplicationError(
      'refused',
      `--replicate-to ${raw}: not s3://<bucket>/<prefix> with a bucket name of 3 to 63 lower-case letters, digits, ` +
        `dots and hyphens`,
    );
  const rawPrefix = (match?.[2] ?? '').replace(/^\/+|\/+$/g, '');
  if (/\/\/|(^|\/)\.\.?(\/|$)/.test(rawPrefix))
    throw new ReplicationError('refused', `--replicate-to ${raw}: the prefix has an empty, . or .. segment`);
  const accessKeyId = env.AWS_ACCESS_KEY_ID ?? '';
  const secretAccessKey = env.AWS_SECRET_ACCESS_KEY ?? '';
  if (accessKeyId === '' || secretAccessKey === '')
    throw new ReplicationError(
      'refused',
      `--replicate-to ${raw}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment (never on the ` +
        `command line, where ps shows them)`,
    );
  let endpoint: URL | undefined;
  const rawEndpoint = env.AWS_ENDPOINT_URL;
  if (rawEndpoint !== undefined && rawEndpoint !== '') {
    try {
      endpoint = new URL(rawEndpoint);
    } catch {
      endpoint = undefined; // said just below
    }
    if (
      endpoint === undefined ||
      (endpoint.protocol !== 'https:' && endpoint.protocol !== 'http:') ||
      endpoint.username !== '' ||
      endpoint.password !== '' ||
      endpoint.search !== ''
    ) {
      throw new ReplicationError(
        'refused',
        'AWS_ENDPOINT_URL must be an http:// or https:// URL such as https://<account>.r2.cloudflarestorage.com, ' +
          'without credentials or a query',
      );
    }
    if (endpoint.protocol === 'http:' && !['127.0.0.1', 'localhost', '[::1]'].includes(endpoint.hostname)) {
      warn(
        `AWS_ENDPOINT_URL ${endpoint.origin} is plain HTTP beyond this machine: the replicas travel in clear (the ` +
          `credentials do not: requests are signed); use https://`,
      );
    }
  }
  const region = env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1';
  return {
    location: { bucket, prefix: rawPrefix === '' ? '' : `${rawPrefix}/`, endpoint, region },
    credentials: { accessKeyId, secretAccessKey, sessionToken: env.AWS_SESSION_TOKEN || undefined },
  };
}
