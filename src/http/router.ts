/** The HTTP methods this service routes; anything else is a 405 on a known path. */
export const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS'] as const;
export type Method = (typeof METHODS)[number];

export interface Match<T> {
  /** The route whose path matched, whatever the method; undefined for an unknown path. */
  path: string | undefined;
  /** The value added for this method and path; undefined when the method is not allowed. */
  value: T | undefined;
  /** Methods allowed on the matched path (for `Allow`). */
  allowed: readonly string[];
  /** Path parameters, still percent-encoded. */
  params: Record<string, string>;
}

interface Entry<T> {
  pattern: string;
  segments: readonly string[];
  byMethod: Map<string, T>;
  allowed: string[];
}

/**
 * A router is data behind two verbs: `add` a value for a method and a path pattern (`/v1/pets/:petId`),
 * and `find` it again. `find` always returns a Match; an unknown path has `path` undefined.
 */
export class Router<T> {
  #static = new Map<string, Entry<T>>();
  #dynamic: Entry<T>[] = [];

  /** Adding GET also answers HEAD on the same path (RFC 9110 §9.3.2), unless HEAD is added itself. */
  add(method: Method, pattern: string, value: T): this {
    const entry = this.#entry(pattern);
    entry.byMethod.set(method, value);
    if (!entry.allowed.includes(method)) entry.allowed.push(method);
    if (method === 'GET' && !entry.byMethod.has('HEAD')) {
      entry.byMethod.set('HEAD', value);
      if (!entry.allowed.includes('HEAD')) entry.allowed.push('HEAD');
    }
    return this;
  }

  find(method: string, path: string): Match<T> {
    const fixed = this.#static.get(path);
    if (fixed !== undefined)
      return { path: fixed.pattern, value: fixed.byMethod.get(method), allowed: fixed.allowed, params: {} };
    for (const entry of this.#dynamic) {
      const params = matchSegments(entry.segments, path);
      if (params !== undefined)
        return { path: entry.pattern, value: entry.byMethod.get(method), allowed: entry.allowed, params };
    }
    return { path: undefined, value: undefined, allowed: [], params: {} };
  }

  #entry(pattern: string): Entry<T> {
    const existing = this.#static.get(pattern) ?? this.#dynamic.find((e) => e.pattern === pattern);
    if (existing !== undefined) return existing;
    const entry: Entry<T> = { pattern, segments: pattern.split('/'), byMethod: new Map(), allowed: [] };
    if (pattern.includes('/:')) this.#dynamic.push(entry);
    else this.#static.set(pattern, entry);
    return entry;
  }
}

/**
 * Matches `path` against a pattern's segments in place: static segments are compared where they
 * stand and only parameters are cut out, so a request allocates no array of segments.
 */
function matchSegments(pattern: readonly string[], path: string): Record<string, string> | undefined {
  const params: Record<string, string> = {};
  let start = 0;
  for (let i = 0; i < pattern.length; i++) {
    const slash = path.indexOf('/', start);
    const last = i === pattern.length - 1;
    if (last ? slash !== -1 : slash === -1) return undefined; // more, or fewer, segments than the pattern
    const end = last ? path.length : slash;
    const expected = pattern[i] as string;
    if (expected.startsWith(':')) {
      if (end === start) return undefined;
      params[expected.slice(1)] = path.slice(start, end);
    } else if (end - start !== expected.length || !path.startsWith(expected, start)) {
      return undefined;
    }
    start = end + 1;
  }
  return params;
}
