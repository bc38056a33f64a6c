// Service accounts, both variants: what a key can do, where, and when it stops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

let service: TestService;
let orgAdmin: string;

beforeAll(async () => {
  service = await startTestService();
  await createOrganization(service, 'acme');
  await createOrganization(service, 'other');
  orgAdmin = (await service.createUser('acme-admin')).token;
  await addMember(service, 'acme', 'acme-admin', 'admin');
});
afterAll(async () => service?.close());

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const createBox = (headers: Record<string, string>, org: string, name: string) =>
  service.request('POST', `/api/organization/${org}/box`, { headers, json: { name } });

describe('service accounts, variant A (POST /api/service-accounts)', () => {
  it("takes exactly the seed's body, acts in the creator's organization, and its token works as Bearer and as a password", async () => {
    const created = await service.request('POST', '/api/service-accounts', { token: orgAdmin, json: { description: 'CI', expirationDays: 30 } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      description: 'CI',
      organization: 'acme',
      role: 'user',
      username: expect.stringMatching(/^sa-/),
      token: expect.stringMatching(/^bxy_sa_/),
    });
    expect(Date.parse(created.body.expires_at) - Date.parse(created.body.created_at)).toBe(30 * 86_400_000);
    const key = created.body.token as string;
    expect((await createBox(bearer(key), 'acme', 'from-key')).status).toBe(201);
    expect((await createBox(bearer(key), 'other', 'from-key')).status).toBe(403);
    const signIn = await service.request('POST', '/api/auth/signin', { json: { username: created.body.username, password: key, stayLoggedIn: true } });
    expect(signIn.status).toBe(200);
    expect(signIn.body.roles).toEqual(['service_account']);
    expect((await service.request('GET', '/api/user', { token: signIn.body.access_token })).body.organization).toBe('acme');
    // Shown once: never in a listing.
    expect(JSON.stringify((await service.request('GET', '/api/service-accounts', { token: orgAdmin })).body)).not.toContain(key);
  });

  it("a failing key lookup at sign-in is the server's failure (5xx), never a wrong password (401)", async () => {
    const created = await service.request('POST', '/api/service-accounts', { token: orgAdmin, json: { description: 'lookup fails' } });
    expect(created.status).toBe(201);
    const signIn = () => service.request('POST', '/api/auth/signin', { json: { username: created.body.username, password: created.body.token } });
    // The table out of reach (a migration holding it, a broken replica): the lookup itself fails.
    await service.sql('alter table service_accounts rename to service_accounts_away');
    try {
      const refused = await signIn();
      expect(refused.status).toBeGreaterThanOrEqual(500);
      expect(JSON.stringify(refused.body)).not.toMatch(/service_accounts|\.ts:\d+/);
    } finally {
      await service.sql('alter table service_accounts_away rename to service_accounts');
    }
    expect((await signIn()).status).toBe(200);
  });

  it('without an organization, an admin who belongs to none is told to name one (422, the organization field); a plain user is refused (403)', async () => {
    // A plain user in no organization: not allowed to create one at all, which is a 403, not a missing field.
    const { token: loner } = await service.createUser('loner');
    const refused = await service.request('POST', '/api/service-accounts', { token: loner, json: { description: 'nowhere' } });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ status: 403, title: expect.any(String) });
    expect(refused.body.errors ?? []).toEqual([]);
    // The global admin became admin of the organizations it made: it leaves them, and belongs to none.
    for (const org of ['acme', 'other'])
      expect((await service.request('DELETE', `/api/organization/${org}/members/admin`, { token: service.adminToken })).status).toBe(200);
    const response = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { description: 'nowhere' } });
    expect(response.status).toBe(422);
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(response.body.errors).toEqual([
      { pointer: '/organization', rule: 'required', params: { missingProperty: 'organization' }, detail: expect.stringContaining('organization') },
    ]);
    // Naming it, as the README shows, works.
    const named = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { description: 'named', organization: 'acme' } });
    expect(named.status).toBe(201);
    expect(named.body.organization).toBe('acme');
  });

  it('stops as soon as its creator is demoted, removed from the organization or deleted, on session tokens made from it too', async () => {
    const { token } = await service.createUser('keymaker');
    await addMember(service, 'acme', 'keymaker', 'admin');
    const make = async () =>
      (await service.request('POST', '/api/service-accounts', { token, json: { description: 'k' } })).body as { token: string; username: string };
    const key = await make();
    const session = (await service.request('POST', '/api/auth/signin', { json: { username: key.username, password: key.token } })).body.access_token as string;
    expect((await service.request('GET', '/api/user', { headers: bearer(key.token) })).status).toBe(200);

    await addMember(service, 'acme', 'keymaker', 'moderator');
    const demoted = await service.request('GET', '/api/user', { headers: bearer(key.token) });
    expect(demoted.status).toBe(401);
    expect(demoted.body.detail).toContain('creator lost the authority');
    expect((await service.request('GET', '/api/user', { token: session })).status).toBe(401);

    await addMember(service, 'acme', 'keymaker', 'admin');
    const second = await make();
    expect((await service.request('DELETE', '/api/organization/acme/members/keymaker', { token: service.adminToken })).status).toBe(200);
    expect((await service.request('GET', '/api/user', { headers: bearer(second.token) })).status).toBe(401);

    await addMember(service, 'acme', 'keymaker', 'admin');
    const third = await make();
    expect((await service.request('GET', '/api/user', { headers: bearer(third.token) })).status).toBe(200);
    const id = (await service.request('GET', '/api/user', { token })).body.id as string;
    await service.sql('delete from users where id = $1', [id]);
    expect((await service.request('GET', '/api/user', { headers: bearer(third.token) })).status).toBe(401);
  });
});

describe('service accounts, variant B (POST /api/admin/service-accounts, POST /api/auth/service-account)', () => {
  let acmeId: number;
  beforeAll(async () => {
    acmeId = (await service.request('GET', '/api/organization/acme')).body.id as number;
  });
  const exchange = (clientId: string, clientSecret: string) => service.request('POST', '/api/auth/service-account', { json: { clientId, clientSecret } });

  it('exchanges clientId and clientSecret for a token that acts in its organization only', async () => {
    const created = await service.request('POST', '/api/admin/service-accounts', {
      token: service.adminToken,
      json: { name: 'deployer', description: 'deploys', organizationId: acmeId },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'deployer',
      organization_id: acmeId,
      organization: 'acme',
      client_id: expect.stringMatching(/^sa-/),
      client_secret: expect.stringMatching(/^bxy_sa_/),
    });
    const token = await exchange(created.body.client_id, created.body.client_secret);
    expect(token.status).toBe(200);
    expect(token.body).toMatchObject({ token_type: 'Bearer', expires_in: service.config.session.ttl_seconds });
    const session = { 'x-access-token': token.body.access_token as string };
    expect((await createBox(session, 'acme', 'by-client')).status).toBe(201);
    const elsewhere = await createBox(session, 'other', 'by-client');
    expect(elsewhere.status).toBe(403);
    expect(elsewhere.headers.get('content-type')).toContain('application/problem+json');
    // The secret is for the exchange only: not a Bearer key, not a password.
    expect((await service.request('GET', '/api/user', { headers: bearer(created.body.client_secret) })).status).toBe(401);
    expect(
      (await service.request('POST', '/api/auth/signin', { json: { username: created.body.client_id, password: created.body.client_secret } })).status,
    ).toBe(401);
    // Wrong pairs.
    expect((await exchange(created.body.client_id, `${created.body.client_secret.slice(0, -2)}xx`)).status).toBe(401);
    expect((await exchange('sa-000000000000', created.body.client_secret)).status).toBe(401);
    expect((await exchange(created.body.client_id, 'garbage')).status).toBe(401);
    // Listed without the secret; deleting it ends its tokens at once.
    const list = await service.request('GET', '/api/admin/service-accounts', { token: service.adminToken });
    expect(list.body.map((a: { client_id: string }) => a.client_id)).toContain(created.body.client_id);
    expect(JSON.stringify(list.body)).not.toContain(created.body.client_secret);
    expect((await service.request('DELETE', `/api/admin/service-accounts/${created.body.id}`, { token: service.adminToken })).status).toBe(200);
    expect((await service.request('GET', '/api/user', { headers: session })).status).toBe(401);
    expect((await exchange(created.body.client_id, created.body.client_secret)).status).toBe(401);
  });

  it('an organization admin makes them for their organization only, and they stop when the admin is removed', async () => {
    const otherId = (await service.request('GET', '/api/organization/other')).body.id as number;
    const { token } = await service.createUser('b-admin');
    await addMember(service, 'acme', 'b-admin', 'admin');
    expect((await service.request('POST', '/api/admin/service-accounts', { token, json: { name: 'x', organizationId: otherId } })).status).toBe(403);
    expect((await service.request('POST', '/api/admin/service-accounts', { token, json: { name: 'x', organizationId: 999_999 } })).status).toBe(404);
    expect((await service.request('POST', '/api/admin/service-accounts', { token, json: { organizationId: acmeId } })).status).toBe(422);
    const created = (await service.request('POST', '/api/admin/service-accounts', { token, json: { name: 'x', organizationId: acmeId } })).body;
    const session = { 'x-access-token': (await exchange(created.client_id, created.client_secret)).body.access_token as string };
    expect((await service.request('GET', '/api/user', { headers: session })).status).toBe(200);
    expect((await service.request('DELETE', '/api/organization/acme/members/b-admin', { token: service.adminToken })).status).toBe(200);
    expect((await service.request('GET', '/api/user', { headers: session })).status).toBe(401);
    expect((await exchange(created.client_id, created.client_secret)).status).toBe(401);
  });
});
