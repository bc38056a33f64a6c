// The account map of the local backend: a username maps a local account only; an identity provider's user, whose
// username the provider chose, is mapped only by its identity (`oidc:<issuer>#<subject>`). Real /etc/passwd
// lookups (`nobody` exists on every Linux); an ability without account creation, so nothing is created here.
import { describe, expect, it } from 'vitest';
import { createAccountResolver, type SwitchAbility } from './local-accounts.ts';

const ability: SwitchAbility = { canSwitch: true, canCreate: false, self: { name: 'boxyard', uid: 999 } };
const config = (map: Record<string, string>) => ({ prefix: 'boxyard-', home_base: '/home', map });
const provider = 'https://id.example.test#248289761001';

describe('the account map', () => {
  it('gives the mapped OS account to the local user of that name', async () => {
    const resolver = createAccountResolver(config({ Alice: 'nobody' }), ability, '/bin/sh');
    expect((await resolver.accountFor({ id: '3f2a9c01-d4e5-4000-8000-000000000001', username: 'alice' })).name).toBe('nobody');
  });

  it("never gives it to an identity provider's user who got that username", async () => {
    const resolver = createAccountResolver(config({ alice: 'nobody' }), ability, '/bin/sh');
    await expect(resolver.accountFor({ id: '3f2a9c01-d4e5-4000-8000-000000000002', username: 'alice', providerIdentity: provider })).rejects.toThrow(
      `no OS account is mapped to oidc:${provider}`,
    );
  });

  it("maps a provider's user by its identity, exactly", async () => {
    const resolver = createAccountResolver(config({ [`oidc:${provider}`]: 'nobody' }), ability, '/bin/sh');
    expect((await resolver.accountFor({ id: '3f2a9c01-d4e5-4000-8000-000000000003', username: 'whoever', providerIdentity: provider })).name).toBe('nobody');
    await expect(
      resolver.accountFor({ id: '3f2a9c01-d4e5-4000-8000-000000000004', username: 'other', providerIdentity: provider.toUpperCase() }),
    ).rejects.toThrow(/no OS account is mapped/);
    // A local user cannot name itself into a provider identity's mapping.
    await expect(resolver.accountFor({ id: '3f2a9c01-d4e5-4000-8000-000000000005', username: `oidc:${provider}` })).rejects.toThrow(/no OS account is mapped/);
  });
});
