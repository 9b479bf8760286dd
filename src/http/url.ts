import { ValidationError } from '../pet/validate.js';

export interface RequestTarget {
  path: string;
  /** The raw query string after `?`, without it; empty when there is none. */
  search: string;
}

/** Splits an origin-form request target without building a `URL` for every request. */
export function splitTarget(target: string): RequestTarget {
  // RFC 9112 §3.2.2: a server must accept the absolute form (`http://host/v1/pets`) too.
  if (target.charCodeAt(0) !== 0x2f) target = originForm(target);
  const q = target.indexOf('?');
  if (q === -1) return { path: target, search: '' };
  return { path: target.slice(0, q), search: target.slice(q + 1) };
}

function originForm(target: string): string {
  const scheme = /^https?:\/\/[^/?#]*/i.exec(target);
  if (scheme === null) return target;
  const rest = target.slice(scheme[0].length);
  return rest === '' || rest.startsWith('?') ? `/${rest}` : rest;
}

/** Percent-decoding that answers malformed input (`%E0%A4%A`, `%zz`) with a 400, never a throw that escapes. */
export function decodeComponent(raw: string, what: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch (error) {
    if (error instanceof URIError) throw new ValidationError(`${what} has malformed percent-encoding`);
    throw error;
  }
}

/**
 * Splits an `application/x-www-form-urlencoded` query into name → raw values. Values stay encoded
 * until a handler reads them (`singleParam`), so that an unknown parameter, however malformed, is
 * simply ignored; repetition is kept so that an ambiguous `limit=1&limit=2` can be refused.
 */
export function parseQuery(search: string): Map<string, string[]> {
  const params = new Map<string, string[]>();
  if (search === '') return params;
  for (const pair of search.split('&')) {
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const name = decodeName(eq === -1 ? pair : pair.slice(0, eq));
    if (name === undefined) continue; // a malformed name is no parameter this service knows
    const value = eq === -1 ? '' : pair.slice(eq + 1);
    const values = params.get(name);
    if (values === undefined) params.set(name, [value]);
    else values.push(value);
  }
  return params;
}

function decodeName(raw: string): string | undefined {
  // Names such as `limit` have nothing to decode: no copy, no try for them (issue 34).
  if (!raw.includes('%') && !raw.includes('+')) return raw;
  try {
    return decodeComponent(raw.replaceAll('+', ' '), 'a query parameter name');
  } catch (error) {
    if (error instanceof ValidationError) return undefined;
    throw error;
  }
}

/** The single decoded value of a query parameter, or undefined; given twice, or malformed, it is a 400. */
export function singleParam(params: Map<string, string[]>, name: string): string | undefined {
  const values = params.get(name);
  if (values === undefined) return undefined;
  if (values.length > 1) throw new ValidationError(`query parameter "${name}" is given more than once`);
  const raw = values[0] as string;
  return decodeComponent(raw.includes('+') ? raw.replaceAll('+', ' ') : raw, `query parameter "${name}"`);
}
