import { createHmac } from 'node:crypto';

/**
 * The Standard Webhooks signature header: `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, keyed
 * with the base64 after `whsec_`, one per secret that signs now, separated by spaces.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestamp: number, body: string): string {
  const content = `${id}.${timestamp}.${body}`;
  return secrets
    .map((secret) => {
      const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
      return `v1,${createHmac('sha256', key).update(content).digest('base64')}`;
    })
    .join(' ');
}
