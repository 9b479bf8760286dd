import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';

/** IPv4 ranges no delivery may reach: this host, private, CGNAT, link-local (metadata), reserved, multicast. */
const IPV4 = [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const;

/**
 * IPv6 ranges: unspecified, loopback and v4-compatible, discard, Teredo, documentation, unique-local,
 * link- and site-local, multicast, local NAT64.
 */
const IPV6 = [
  ['::', 96],
  ['100::', 64],
  ['2001::', 32],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['64:ff9b:1::', 48],
] as const;

const forbidden = new BlockList();
for (const [address, prefix] of IPV4) {
  // BlockList matches IPv4-mapped IPv6 (::ffff:a.b.c.d) to IPv4 rules itself;
  // 6to4, NAT64 and IPv4-translated (SIIT) embed the address elsewhere.
  forbidden.addSubnet(address, prefix, 'ipv4');
  const [a = 0, b = 0, c = 0, d = 0] = address.split('.').map(Number);
  const high = ((a << 8) | b).toString(16);
  const low = ((c << 8) | d).toString(16);
  forbidden.addSubnet(`2002:${high}:${low}::`, 16 + prefix, 'ipv6');
  forbidden.addSubnet(`64:ff9b::${high}:${low}`, 96 + prefix, 'ipv6');
  forbidden.addSubnet(`::ffff:0:${high}:${low}`, 96 + prefix, 'ipv6');
}
for (const [address, prefix] of IPV6) forbidden.addSubnet(address, prefix, 'ipv6');

/** Whether `address` (an IP literal) is one a webhook must not connect to without --webhooks-allow-private. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  return family === 0 || forbidden.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** A delivery refused because of where it would connect: counted as `refused`, never retried any sooner. */
export class AddressRefusedError extends Error {
  readonly code = 'ERR_PETSTORE_WEBHOOK_ADDRESS';

  constructor(host: string, address: string) {
    super(
      `${host} resolves to ${address}, a loopback, private, link-local or reserved address; ` +
        'allowed only with --webhooks-allow-private',
    );
    this.name = 'AddressRefusedError';
  }
}

type Resolver = (
  hostname: string,
  options: LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * The `lookup` of each delivery's connection: the addresses the name resolves to now, at connect
 * time, without the forbidden ones, so that a name rebound to a private address between two
 * deliveries (or between a check and the connect) is refused. `resolve` is the system resolver.
 */
export function guardedLookup(resolve: Resolver = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { family: options.family ?? 0, hints: options.hints ?? 0, all: true }, (error, addresses) => {
      if (error !== null) return void callback(error, '', 0);
      const allowed = addresses.filter((a) => !isForbiddenAddress(a.address));
      const first = allowed[0];
      if (first === undefined)
        return void callback(new AddressRefusedError(hostname, addresses[0]?.address ?? 'nothing'), '', 0);
      if (options.all === true) (callback as unknown as (e: null, all: LookupAddress[]) => void)(null, allowed);
      else callback(null, first.address, first.family);
    });
  };
}
