// Which addresses a webhook may reach. A URL given by an admin must not turn the service into a way into the
// network it runs in (cloud metadata at 169.254.169.254, the database on loopback, pods on private ranges), so
// only public unicast addresses are allowed unless `webhooks.allow_private_targets` says otherwise. The check runs
// on the addresses the connection really uses (in the socket's DNS lookup), so a name that resolved to a public
// address when the webhook was saved and to 127.0.0.1 now (DNS rebinding) is still refused.
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/** ipaddr.js' range names; everything but `unicast` is somewhere a webhook must not go by default. */
export function addressRange(address: string): string {
  if (!ipaddr.isValid(address)) return 'invalid';
  // process(): an IPv4-mapped IPv6 address (::ffff:127.0.0.1) is judged as the IPv4 address it carries.
  return ipaddr.process(address).range();
}

export const isPublicAddress = (address: string) => addressRange(address) === 'unicast';

export class TargetAddressRefused extends Error {
  readonly code = 'EWEBHOOKTARGET';
  readonly host: string;
  readonly address: string;
  constructor(host: string, address: string) {
    super(`${host} resolves to ${address} (${addressRange(address)}), which webhooks may not reach (webhooks.allow_private_targets)`);
    this.name = 'TargetAddressRefused';
    this.host = host;
    this.address = address;
  }
}

/** The URL's host, when it is an address literal (no DNS lookup happens for it, so it is checked up front). */
export function literalAddress(url: URL): string | undefined {
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return isIP(host) ? host : undefined;
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** A `lookup` for net/tls.connect (undici's `connect` options) that refuses non-public addresses. */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: LookupOptions, callback: LookupCallback): void => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      // Every address must pass: the connection may try any of them (Happy Eyeballs).
      const refused = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
      if (refused) return callback(new TargetAddressRefused(hostname, refused.address), []);
      if (options.all) return callback(null, addresses);
      const [first] = addresses;
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
      callback(null, first.address, first.family);
    });
  };
}
