// The pure parts of provider sign-in (return_to, the sealed transaction cookie, usernames) and the identity
// links on a real PostgreSQL. The flow itself is tested end to end in the services, against a real provider.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { accountMigrations, createAccounts } from '../accounts/accounts.ts';
import { migrate } from '../db/migrate.ts';
import { createDatabasePool, type DatabasePool } from '../db/pool.ts';
import { createIdentityLinks, oidcSignInMigrations, usernameFrom, type ProviderIdentity, type RoleMapping } from './identities.ts';
import { safeReturnPath } from './return-to.ts';
import { createTransactionSealer } from './transaction.ts';

describe('return_to', () => {
  it('keeps paths on this service', () => {
    expect(safeReturnPath('/')).toBe('/');
    expect(safeReturnPath('/docs/a%20b/?page=2#top')).toBe('/docs/a%20b/?page=2#top');
    expect(safeReturnPath(undefined)).toBe('/');
  });

  it('percent-encodes characters beyond ASCII, so the path fits a Location header', () => {
    expect(safeReturnPath('/docs/€ü/?q=日本#κ')).toBe('/docs/%E2%82%AC%C3%BC/?q=%E6%97%A5%E6%9C%AC#%CE%BA');
    expect(safeReturnPath('/\u{1F600}\uD800')).toBe('/%F0%9F%98%80%EF%BF%BD');
  });

  it.each([
    'https://evil.example',
    '//evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    'evil.example',
    'javascript:alert(1)',
    '/\t/evil.example',
    '/auth/oidc/login',
    ' /x',
    '',
  ])('refuses %j', (value) => {
    expect(safeReturnPath(value)).toBe('/');
  });
});

describe('sign-in transaction cookie', () => {
  const transaction = { state: 's', nonce: 'n', codeVerifier: 'v', returnTo: '/x' };

  it('round-trips, and is opaque', async () => {
    const sealer = createTransactionSealer('a'.repeat(32), 'terminal');
    const sealed = await sealer.seal(transaction);
    expect(sealed).not.toContain('/x');
    expect(await sealer.open(sealed)).toEqual(transaction);
  });

  it('refuses a cookie sealed for another service or secret, or tampered with', async () => {
    const sealed = await createTransactionSealer('a'.repeat(32), 'terminal').seal(transaction);
    expect(await createTransactionSealer('a'.repeat(32), 'file-share').open(sealed)).toBeUndefined();
    expect(await createTransactionSealer('b'.repeat(32), 'terminal').open(sealed)).toBeUndefined();
    const parts = sealed.split('.');
    parts[3] = `${parts[3]!.slice(0, -2)}AA`;
    expect(await createTransactionSealer('a'.repeat(32), 'terminal').open(parts.join('.'))).toBeUndefined();
    expect(await createTransactionSealer('a'.repeat(32), 'terminal').open(undefined)).toBeUndefined();
  });
});

describe('usernames from claims', () => {
  it('keeps usable names and cleans the rest', () => {
    expect(usernameFrom('alice')).toBe('alice');
    expect(usernameFrom('alice@example.test')).toBe('alice@example.test');
    expect(usernameFrom('José García')).toBe('Jose-Garcia');
    expect(usernameFrom('..hidden')).toBe('hidden');
    expect(usernameFrom('名前')).toBe('user');
    expect(usernameFrom('x'.repeat(200))).toHaveLength(48);
  });
});

describe('identity links', () => {
  let pool: DatabasePool;
  const mapping: RoleMapping = { admin: 'admin', user: 'user', adminGroups: ['ops'] };
  const identity = (subject: string, extra: Partial<ProviderIdentity> = {}): ProviderIdentity => ({
    issuer: 'https://idp.example.test',
    subject,
    username: subject,
    email: undefined,
    groups: [],
    ...extra,
  });

  beforeAll(async () => {
    const url = await createTestDatabase('oidc_links');
    await migrate(url, 'svc', [accountMigrations, oidcSignInMigrations]);
    pool = await createDatabasePool({ url, schema: 'svc' });
  });
  afterAll(() => pool?.end());

  it('creates a user on first sight and finds the same one again, with the role re-evaluated each time', async () => {
    const links = createIdentityLinks(pool);
    const first = await links.signIn(identity('carol', { groups: ['ops'], email: 'carol@example.test' }), mapping);
    expect(first).toMatchObject({ username: 'carol', role: 'admin', email: 'carol@example.test' });
    const again = await links.signIn(identity('carol', { groups: ['devs'], email: 'carol@example.test' }), mapping);
    expect(again).toMatchObject({ id: first.id, username: 'carol', role: 'user' });
    // The same subject at another issuer is someone else.
    const other = await links.signIn({ ...identity('carol'), issuer: 'https://other.example.test' }, mapping);
    expect(other.id).not.toBe(first.id);
    expect(other.username).toMatch(/^carol-[0-9a-f]{6}$/);
  });

  it('never takes over a local account with the same username or email; a password never opens the new one', async () => {
    const accounts = createAccounts(pool);
    const local = await accounts.create({ username: 'dave', password: 'Local-Pass-123', role: 'admin', email: 'dave@example.test' });
    const links = createIdentityLinks(pool);
    const linked = await links.signIn(identity('dave-sub', { username: 'Dave', email: 'dave@example.test' }), mapping);
    expect(linked.id).not.toBe(local.id);
    expect(linked.username).toMatch(/^Dave-[0-9a-f]{6}$/);
    expect(linked.email).toBeNull();
    expect(linked.role).toBe('user');
    expect(await accounts.verifyCredentials(linked.username, '')).toBeUndefined();
  });

  it('makes one user when the same identity signs in twice at once', async () => {
    const links = createIdentityLinks(pool);
    const [a, b] = await Promise.all([links.signIn(identity('erin'), mapping), links.signIn(identity('erin'), mapping)]);
    expect(a.id).toBe(b.id);
  });

  it('redeems a state once, and keeps ID tokens per session until taken', async () => {
    const links = createIdentityLinks(pool);
    const later = new Date(Date.now() + 60_000);
    expect(await links.redeemState('state-1', later)).toBe(true);
    expect(await links.redeemState('state-1', later)).toBe(false);
    await links.rememberSession('jti-1', 'id.token.value', later);
    expect(await links.takeSession('jti-1')).toBe('id.token.value');
    expect(await links.takeSession('jti-1')).toBeUndefined();
  });
});
