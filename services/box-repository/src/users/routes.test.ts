// User administration by global admins, and moderators and admins limited to their own organizations.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization, startTestService, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

let service: TestService;
const tokens: Record<string, string> = {};

beforeAll(async () => {
  service = await startTestService();
  await createOrganization(service, 'acme');
  await createOrganization(service, 'other');
  for (const name of ['alice', 'bob', 'acme-user', 'other-mod', 'other-admin']) tokens[name] = (await service.createUser(name)).token;
  await addMember(service, 'acme', 'alice', 'admin');
  await addMember(service, 'acme', 'acme-user', 'user');
  await addMember(service, 'other', 'other-mod', 'moderator');
  await addMember(service, 'other', 'other-admin', 'admin');
});
afterAll(async () => service?.close());

const admin = (method: string, path: string, json?: unknown, token = service.adminToken) =>
  service.request(method, path, { token, ...(json !== undefined ? { json } : {}) });
const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

describe('user administration (global admins)', () => {
  it('lists accounts with roles, state and organizations, filtered and paged', async () => {
    const list = await admin('GET', '/api/admin/users?per_page=100');
    expect(list.status).toBe(200);
    expect(list.body).toContainEqual(
      expect.objectContaining({ username: 'alice', roles: ['user'], disabled: false, organizations: [{ name: 'acme', role: 'admin' }] }),
    );
    expect(list.body).toContainEqual(expect.objectContaining({ username: 'admin', roles: ['user', 'admin'] }));
    const filtered = await admin('GET', '/api/admin/users?q=other-');
    expect(filtered.body.map((u: { username: string }) => u.username)).toEqual(['other-admin', 'other-mod']);
    const paged = await admin('GET', '/api/admin/users?per_page=2');
    expect(paged.body).toHaveLength(2);
    expect(Number(paged.headers.get('x-total-count'))).toBeGreaterThanOrEqual(6);
    expect((await admin('GET', '/api/admin/users/nobody')).status).toBe(404);
  });

  it("a disabled user's sessions, refresh tokens, password and keys stop at once; re-enabling restores sign-in", async () => {
    const signIn = await service.request('POST', '/api/auth/signin', { json: { username: 'alice', password: USER_PASSWORD } });
    const key = (await service.request('POST', '/api/service-accounts', { token: tokens.alice, json: { description: 'alice ci' } })).body.token as string;
    expect((await service.request('GET', '/api/user', { headers: basic('alice', USER_PASSWORD) })).status).toBe(200);
    expect((await service.request('GET', '/api/user', { headers: { authorization: `Bearer ${key}` } })).status).toBe(200);

    const disabled = await admin('PATCH', '/api/admin/users/alice', { disabled: true });
    expect(disabled.status).toBe(200);
    expect(disabled.body.disabled).toBe(true);
    expect((await service.request('GET', '/api/user', { token: tokens.alice })).status).toBe(401);
    expect((await service.request('GET', '/api/user', { token: signIn.body.access_token })).status).toBe(401);
    // Basic credentials verified a moment ago are not served from the verified-credential cache.
    expect((await service.request('GET', '/api/user', { headers: basic('alice', USER_PASSWORD) })).status).toBe(401);
    expect((await service.request('GET', '/api/user', { headers: { authorization: `Bearer ${key}` } })).status).toBe(401);
    expect((await service.request('POST', '/api/auth/refreshtoken', { json: { refreshToken: signIn.body.refresh_token } })).status).toBe(401);
    expect((await service.request('POST', '/api/auth/signin', { json: { username: 'alice', password: USER_PASSWORD } })).status).toBe(401);

    expect((await admin('PATCH', '/api/admin/users/alice', { disabled: false })).status).toBe(200);
    tokens.alice = await service.signIn('alice', USER_PASSWORD);
    expect((await service.request('GET', '/api/user', { token: tokens.alice })).status).toBe(200);
  });

  it('grants and revokes admin; the last enabled admin cannot be demoted, disabled or deleted', async () => {
    expect((await admin('GET', '/api/admin/users', undefined, tokens.bob)).status).toBe(403);
    const granted = await admin('PATCH', '/api/admin/users/bob', { admin: true });
    expect(granted.body.roles).toEqual(['user', 'admin']);
    expect((await admin('GET', '/api/admin/users', undefined, tokens.bob)).status).toBe(200);
    expect((await admin('PATCH', '/api/admin/users/bob', { admin: false })).body.roles).toEqual(['user']);
    expect((await admin('GET', '/api/admin/users', undefined, tokens.bob)).status).toBe(403);

    for (const [method, json] of [
      ['PATCH', { admin: false }],
      ['PATCH', { disabled: true }],
      ['DELETE', undefined],
    ] as const) {
      const refused = await admin(method, '/api/admin/users/admin', json);
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toContain('last enabled administrator');
    }
    expect((await service.request('GET', '/api/user', { token: service.adminToken })).body.roles).toEqual(['user', 'admin']);
  });

  it('deletes an account: its sessions stop, its boxes stay', async () => {
    const { token } = await service.createUser('leaving');
    await addMember(service, 'acme', 'leaving', 'user');
    expect((await service.request('POST', '/api/organization/acme/box', { token, json: { name: 'left-behind' } })).status).toBe(201);
    expect((await admin('DELETE', '/api/admin/users/leaving')).status).toBe(200);
    expect((await service.request('GET', '/api/user', { token })).status).toBe(401);
    expect((await admin('GET', '/api/admin/users/leaving')).status).toBe(404);
    expect((await service.request('GET', '/api/organization/acme/box/left-behind', { token: service.adminToken })).status).toBe(200);
    expect((await admin('DELETE', '/api/admin/users/leaving')).status).toBe(404);
  });

  it('refuses callers who are not global admins, and bad input', async () => {
    expect((await service.request('GET', '/api/admin/users')).status).toBe(401);
    for (const who of ['alice', 'other-mod', 'acme-user']) {
      expect((await admin('PATCH', '/api/admin/users/bob', { disabled: true }, tokens[who])).status).toBe(403);
      expect((await admin('DELETE', '/api/admin/users/bob', undefined, tokens[who])).status).toBe(403);
    }
    expect((await admin('PATCH', '/api/admin/users/bob', {})).status).toBe(422);
    expect((await admin('PATCH', '/api/admin/users/bob', { role: 'admin' })).status).toBe(422);
    expect((await admin('PATCH', '/api/admin/users/bob', { disabled: 'yes' })).status).toBe(422);
  });
});

describe('moderators and admins manage their own organizations only', () => {
  it('a moderator or admin of organization B acting on organization A is refused, and A is unchanged', async () => {
    for (const who of ['other-mod', 'other-admin']) {
      expect((await service.request('PUT', '/api/organization/acme/members/bob', { token: tokens[who], json: { role: 'user' } })).status, who).toBe(403);
      expect((await service.request('DELETE', '/api/organization/acme/members/acme-user', { token: tokens[who] })).status, who).toBe(403);
      expect(
        (await service.request('POST', '/api/auth/invite', { token: tokens[who], json: { email: 'x@example.test', organizationName: 'acme' } })).status,
        who,
      ).toBe(403);
    }
    const members = (await service.request('GET', '/api/organization/acme/members', { token: service.adminToken })).body.map(
      (m: { username: string }) => m.username,
    );
    expect(members).toContain('acme-user');
    expect(members).not.toContain('bob');
    // In their own organization they may.
    expect((await service.request('PUT', '/api/organization/other/members/bob', { token: tokens['other-mod'], json: { role: 'user' } })).status).toBe(200);
    expect((await service.request('DELETE', '/api/organization/other/members/bob', { token: tokens['other-admin'] })).status).toBe(200);
  });
});
