import type { IncomingMessage } from 'node:http';
import { BlockList, isIP } from 'node:net';

/**
 * Hops of a header looked at, from the right: more trusted proxies than this in a row is no deployment,
 * and each look-up costs (bench/results.md, "--trust-proxy: a header of trusted hops").
 */
const MAX_HOPS = 16;

/** The proxies whose word on the client's address is taken (`--trust-proxy`). */
export interface TrustedProxies {
  readonly list: BlockList;
}

/**
 * `--trust-proxy`: comma-separated addresses or CIDR networks, IPv4 or IPv6 (`127.0.0.1`,
 * `10.0.0.0/8`, `::1`, `fd00::/8`). A TypeError says which entry is not one.
 */
export function trustedProxies(text: string): TrustedProxies {
  const list = new BlockList();
  const entries = text
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  if (entries.length === 0)
    throw new TypeError(
      'the trusted proxies must be at least one address or CIDR network, such as 127.0.0.1 or 10.0.0.0/8',
    );
  for (const entry of entries) {
    const [address = '', prefix, extra] = entry.split('/');
    const family = isIP(address);
    const bits = family === 4 ? 32 : 128;
    const length = prefix === undefined ? bits : /^[0-9]{1,3}$/.test(prefix) ? Number(prefix) : NaN;
    if (family === 0 || extra !== undefined || !(length >= 0 && length <= bits)) {
      throw new TypeError(
        `a trusted proxy must be an IPv4 or IPv6 address or CIDR network (such as 10.0.0.0/8 or fd00::/8); got ` +
          `${JSON.stringify(entry)}`,
      );
    }
    list.addSubnet(address, length, family === 4 ? 'ipv4' : 'ipv6');
  }
  return { list };
}

/**
 * The client's address: the peer's, or, when the peer is a trusted proxy, the right-most address of
 * X-Forwarded-For (else Forwarded, RFC 7239) that is not itself a trusted proxy. Headers from any
 * other peer are ignored, so a client cannot name an address of its choosing.
 */
export function clientAddress(req: IncomingMessage, trusted: TrustedProxies): string {
  const peer = plainAddress(req.socket.remoteAddress ?? '') ?? 'unknown';
  if (!isTrusted(trusted, peer)) return peer;
  // nginx and Caddy append to X-Forwarded-For and pass a client's own Forwarded on untouched.
  const forwarded = req.headers['x-forwarded-for'];
  const hops = forwarded !== undefined ? String(forwarded).split(',') : forwardedFor(req.headers.forwarded ?? '');
  let client = peer;
  for (let i = hops.length - 1; i >= Math.max(0, hops.length - MAX_HOPS); i--) {
    const hop = plainAddress(nodeName(hops[i] ?? ''));
    // A hop that names no address ("unknown", an obfuscated name, garbage): the nearest proxy's word ends there.
    if (hop === undefined) return client;
    client = hop;
    if (!isTrusted(trusted, hop)) return hop;
  }
  return client;
}

function isTrusted(trusted: TrustedProxies, address: string): boolean {
  const family = isIP(address);
  return family !== 0 && trusted.list.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/**
 * An IP address as written in logs and limits, one spelling per address: IPv4-mapped IPv6 as IPv4, a zone dropped,
 * IPv6 in RFC 5952's form (lower case, zeros compressed); undefined when not one.
 */
function plainAddress(text: string): string | undefined {
  const address = text.replace(/%.*$/, '');
  const family = isIP(address);
  if (family !== 6) return family === 4 ? address : undefined;
  // The URL serializer writes RFC 5952's form, and a mapped IPv4 in hex (::ffff:cb00:7109) whatever it was given.
  const canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(canonical);
  if (mapped === null) return canonical;
  const high = Number.parseInt(mapped[1] ?? '', 16);
  const low = Number.parseInt(mapped[2] ?? '', 16);
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * RFC 7239 node: `192.0.2.43`, `192.0.2.43:47011`, `[2001:db8::17]`, `[2001:db8::17]:4711`; bare IPv6 as some proxies
 * write it.
 */
function nodeName(text: string): string {
  const node = text.trim();
  if (node.startsWith('[')) {
    const end = node.indexOf(']');
    return end === -1 ? '' : node.slice(1, end);
  }
  const colon = node.indexOf(':');
  return colon !== -1 && colon === node.lastIndexOf(':') ? node.slice(0, colon) : node;
}

/**
 * The `for` values of a Forwarded field, in order, quotes and escapes undone; commas and semicolons inside quotes kept.
 */
function forwardedFor(field: string): string[] {
  const values: string[] = [];
  let element = '';
  let found: string | undefined;
  let quoted = false;
  const endPair = (): void => {
    const equals = element.indexOf('=');
    if (equals !== -1 && element.slice(0, equals).trim().toLowerCase() === 'for')
      found = unquote(element.slice(equals + 1).trim());
    element = '';
  };
  for (let i = 0; i < field.length; i++) {
    const c = field[i];
    if (quoted && c === '\\') {
      element += c + (field[++i] ?? '');
      continue;
    }
    if (c === '"') quoted = !quoted;
    if (!quoted && (c === ';' || c === ',')) {
      endPair();
      if (c === ',') {
        // An element without `for` still counts as a hop, whose address is unknown.
        values.push(found ?? '');
        found = undefined;
      }
      continue;
    }
    element += c;
  }
  endPair();
  values.push(found ?? '');
  return values;
}

function unquote(value: string): string {
  if (!value.startsWith('"')) return value;
  return value.slice(1, value.endsWith('"') ? -1 : undefined).replace(/\\(.)/g, '$1');
}
