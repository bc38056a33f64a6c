import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { lookupAccount } from './identity.ts';

// /etc/passwd first, NSS (getent) only for a name the file does not hold.
describe('lookupAccount', () => {
  const entries = readFileSync('/etc/passwd', 'utf8').split('\n').filter(Boolean);

  it('gives every account of /etc/passwd as getent does', () => {
    for (const line of entries.slice(0, 5)) {
      const name = line.split(':')[0]!;
      const [, , uid, gid, , home] = execFileSync('getent', ['passwd', name], { encoding: 'utf8' }).trim().split(':');
      expect(lookupAccount(name)).toEqual({ name, uid: Number(uid), gid: Number(gid), home: home || undefined });
    }
  });

  it('matches whole names only: a prefix of an account is no account', () => {
    const name = entries[0]!.split(':')[0]!;
    expect(lookupAccount(name.slice(0, -1))).toBeUndefined();
    expect(lookupAccount(`${name}x`)).toBeUndefined();
  });

  it('finds no account that neither the file nor NSS knows', () => {
    expect(lookupAccount('boxyard-no-such-account-7f3a')).toBeUndefined();
  });
});
