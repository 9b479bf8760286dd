import { BASE_PATH } from '../pet/contract.js';

/** Where the service is reachable: its own paths, and the addresses the OpenAPI document names. */
export interface Mount {
  /** The mount prefix: '' or a path such as '/api'. Every route, `/healthz` included, lives under it. */
  root: string;
  /** The API's base path: root + '/v1'. `Location` and `Link` headers are built on it. */
  base: string;
  /** Absolute base URLs (each ending in /v1) listed as OpenAPI `servers`; empty: the relative `base`. */
  publicUrls: readonly string[];
  /** Whether the reference page (`GET /v1/docs`) is served. */
  docs: boolean;
}

const PREFIX = /^(\/[A-Za-z0-9._~!$&'()*+,;=:@-]+)+$/;

/** Checks an embedder's `basePath` and `publicUrls`; a TypeError says what is wrong. */
export function createMount(basePath = '', publicUrls: readonly string[] = [], docs = true): Mount {
  if (basePath !== '' && (!PREFIX.test(basePath) || /\/\.{1,2}(\/|$)/.test(basePath))) {
    throw new TypeError(
      `basePath must be empty or a path like "/api": segments after "/", no "." or ".." segment, no trailing "/", no ` +
        `"?", "#" or "%"; got ${JSON.stringify(basePath)}`,
    );
  }
  for (const url of publicUrls) checkPublicUrl(url);
  return { root: basePath, base: basePath + BASE_PATH, publicUrls: [...publicUrls], docs };
}

/** `PETSTORE_PUBLIC_URL`: one base URL or a comma-separated list (production, staging). */
export function parsePublicUrls(text: string): string[] {
  const urls = text
    .split(',')
    .map((u) => u.trim())
    .filter((u) => u !== '');
  for (const url of urls) checkPublicUrl(url);
  return urls;
}

/**
 * A public URL is published in the OpenAPI document as it is given, so it must be exactly what a URL
 * parser writes back: otherwise a newline, a backslash or markup in it would be published, and
 * clients would read it as another address than the one shown.
 */
function checkPublicUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch (error) {
    if (!(error instanceof TypeError)) throw error;
  }
  // The contract: both base addresses end with the version segment /v1.
  if (parsed === undefined) throw notPublicUrl(url);
  const ok =
    (parsed.protocol === 'https:' || parsed.protocol === 'http:') &&
    parsed.search === '' &&
    parsed.hash === '' &&
    parsed.username === '' &&
    parsed.password === '' &&
    parsed.pathname.endsWith(BASE_PATH) &&
    url.endsWith(BASE_PATH);
  if (!ok) throw notPublicUrl(url);
  if (parsed.href !== url) {
    throw new TypeError(
      `a public URL must be written as a URL parser writes it back, so that clients read the address shown: got ` +
        `${JSON.stringify(url)}, which reads as ${JSON.stringify(parsed.href)}`,
    );
  }
}

function notPublicUrl(url: string): TypeError {
  return new TypeError(
    `a public URL must be an absolute http(s) URL without credentials, ending in ${BASE_PATH}, such as ` +
      `https://api.example.com${BASE_PATH}; got ${JSON.stringify(url)}`,
  );
}
