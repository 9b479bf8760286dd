import type { AcceptedKey } from '../../auth/keyring.js';
import { scopeBit } from '../../auth/key-scopes.js';
import type { QuotaCounter, QuotaPolicy } from '../../auth/quota.js';
import { AUTH_REALM, type Scope } from '../../pet/contract.js';
import { monotonicMs } from '../../lib/monotonic.js';
import { HttpError } from '../http-error.js';

/**
 * The quotas of a server: one counter for every key, and its own policy (undefined: only keys with a quota of their own
 * are counted).
 */
export interface Quotas {
  counter: QuotaCounter;
  policy: QuotaPolicy | undefined;
}

/**
 * The name of the quota policy in RateLimit-Policy and RateLimit (an RFC 9651 String, as
 * draft-ietf-httpapi-ratelimit-headers-11 requires): one policy, counted per API key, whether its
 * numbers are the server's or the key's own.
 */
export const QUOTA_POLICY_NAME = 'per-key';
const NAME = `"${QUOTA_POLICY_NAME}"`;

// RateLimit-Policy's value, made once per policy: the server's lasts as long as it runs.
const policyFields = new WeakMap<QuotaPolicy, string>();

function policyField(policy: QuotaPolicy): string {
  let field = policyFields.get(policy);
  if (field === undefined) policyFields.set(policy, (field = `${NAME};q=${policy.requests};w=${policy.seconds}`));
  return field;
}

/**
 * What an authenticated request may do, after its key is known: first the key's quota (429
 * `rate_limited`; every request of a key under a quota counts, whatever its answer), then the scope
 * its route needs (403 `insufficient_scope`, RFC 6750 §3.1). The quota's state is pushed onto
 * `context`, the headers every answer of this request carries: `t` rounded up, so that a client
 * that waits `t` seconds finds the quota whole, and Retry-After on a 429 the same moment.
 */
export function authorize(key: AcceptedKey, scope: Scope | undefined, quotas: Quotas, context: string[]): void {
  const policy = key.quota ?? quotas.policy;
  if (policy !== undefined) {
    const { admitted, remaining, resetSeconds } = quotas.counter.take(key.identity, policy, monotonicMs());
    context.push('ratelimit-policy', policyField(policy), 'ratelimit', `${NAME};r=${remaining};t=${resetSeconds}`);
    if (!admitted) {
      const message =
        `this API key's quota of ${policy.requests} request${policy.requests === 1 ? '' : 's'} per ` +
        `${policy.seconds} s is used up; retry after Retry-After seconds`;
      throw new HttpError(429, 'rate_limited', message, { 'retry-after': String(resetSeconds) });
    }
  }
  if (scope !== undefined && (key.scopes & scopeBit(scope)) === 0) {
    const challenge = `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${scope}"`;
    throw new HttpError(
      403,
      'insufficient_scope',
      `this API key does not hold the scope ${scope}, which this operation needs`,
      { 'www-authenticate': challenge },
    );
  }
}
