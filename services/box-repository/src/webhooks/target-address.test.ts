import { describe, expect, it } from 'vitest';
import { addressRange, guardedLookup, isPublicAddress, literalAddress, TargetAddressRefused } from './target-address.ts';

const lookup = (allowPrivate: boolean, host: string, all: boolean) =>
  new Promise<{ error: Error | null; address: unknown }>((resolve) =>
    guardedLookup(allowPrivate)(host, { all }, (error, address) => resolve({ error, address })),
  );

describe('webhook target addresses', () => {
  it('allows public unicast addresses only', () => {
    for (const address of ['93.184.215.14', '2606:4700:4700::1111', '8.8.8.8']) expect(isPublicAddress(address), address).toBe(true);
    const refused = {
      '127.0.0.1': 'loopback',
      '::1': 'loopback',
      '10.1.2.3': 'private',
      '172.16.0.1': 'private',
      '192.168.1.1': 'private',
      '169.254.169.254': 'linkLocal',
      'fe80::1': 'linkLocal',
      'fd00::1': 'uniqueLocal',
      '100.64.0.1': 'carrierGradeNat',
      '0.0.0.0': 'unspecified',
      '::': 'unspecified',
      '224.0.0.1': 'multicast',
      '255.255.255.255': 'broadcast',
      // An IPv4-mapped IPv6 address is the IPv4 address it carries.
      '::ffff:127.0.0.1': 'loopback',
      '::ffff:169.254.169.254': 'linkLocal',
    };
    for (const [address, range] of Object.entries(refused)) {
      expect(addressRange(address), address).toBe(range);
      expect(isPublicAddress(address), address).toBe(false);
    }
    expect(isPublicAddress('not-an-address')).toBe(false);
  });

  it('reads address literals from URLs (IPv6 in brackets), and leaves names to the lookup', () => {
    expect(literalAddress(new URL('http://127.0.0.1:8080/hook'))).toBe('127.0.0.1');
    expect(literalAddress(new URL('http://[::1]/hook'))).toBe('::1');
    // WHATWG URL parsing normalises the other spellings of an IPv4 address.
    expect(literalAddress(new URL('http://2130706433/hook'))).toBe('127.0.0.1');
    expect(literalAddress(new URL('http://0x7f.1/hook'))).toBe('127.0.0.1');
    expect(literalAddress(new URL('http://localhost/hook'))).toBeUndefined();
  });

  it('refuses a name that resolves to loopback at connect time, unless private targets are allowed', async () => {
    for (const all of [true, false]) {
      const refused = await lookup(false, 'localhost', all);
      expect(refused.error).toBeInstanceOf(TargetAddressRefused);
      expect(refused.error?.message).toMatch(/localhost resolves to (127\.0\.0\.1|::1) \(loopback\)/);
      const allowed = await lookup(true, 'localhost', all);
      expect(allowed.error).toBeNull();
      expect(JSON.stringify(allowed.address)).toMatch(/127\.0\.0\.1|::1/);
    }
  });
});
