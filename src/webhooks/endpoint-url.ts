/**
 * Which URLs a subscription may deliver to: absolute https (http only when allowed, for tests and
 * local receivers), no user name or password (they would show in `list`, logs and `ps`), no fragment.
 * The address it resolves to is checked later, at each connect (address-policy.ts).
 */
export function checkEndpointUrl(text: string, allowHttp: boolean): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch (error) {
    throw new TypeError('the webhook URL is not an absolute URL (https://host/path)', { cause: error });
  }
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && allowHttp)) {
    throw new TypeError(
      url.protocol === 'http:'
        ? 'the webhook URL is http: deliveries go over https only, ' +
            'unless --webhooks-allow-http (PETSTORE_WEBHOOKS_ALLOW_HTTP=true)'
        : `the webhook URL must be https, not ${url.protocol.slice(0, -1)}`,
    );
  }
  if (url.username !== '' || url.password !== '')
    throw new TypeError('the webhook URL must not hold a user name or password');
  if (url.hash !== '') throw new TypeError('the webhook URL must not have a #fragment');
  if (text.length > 2048) throw new TypeError('the webhook URL is longer than 2048 characters');
  return url;
}

/** The URL's origin alone, for logs and metrics: a path may hold a token (as chat webhooks' do). */
export function endpointOrigin(url: string): string {
  return new URL(url).origin;
}
