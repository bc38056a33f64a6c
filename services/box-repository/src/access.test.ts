// Every route for the roles that must pass and those that must be refused: anonymous, a signed-in non-member,
// a member (user role), the box's creator, a moderator, an organization admin, a global admin (not a member),
// a service-account key of the organization, and one of another organization.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox } from './testing/boxes.ts';
import { addMember, archPath, createBoxPath, createOrganization, startTestService, uploadRaw, type BoxPath, type TestService } from './testing/service.ts';

type Role = 'anonymous' | 'outsider' | 'member' | 'creator' | 'moderator' | 'orgAdmin' | 'globalAdmin' | 'serviceAccount' | 'foreignServiceAccount';
const ROLES: Role[] = ['anonymous', 'outsider', 'member', 'creator', 'moderator', 'orgAdmin', 'globalAdmin', 'serviceAccount', 'foreignServiceAccount'];

/** Expected status per role; roles not named get `otherwise`. */
const expectFor = (passing: Partial<Record<Role, number>>, otherwise = 403): Record<Role, number> =>
  Object.fromEntries(ROLES.map((role) => [role, passing[role] ?? (role === 'anonymous' ? 401 : otherwise)])) as Record<Role, number>;

const readers = { member: 200, creator: 200, moderator: 200, orgAdmin: 200, globalAdmin: 200, serviceAccount: 200 };
const everyone = { anonymous: 200, outsider: 200, foreignServiceAccount: 200, ...readers };
const managers = (status: number) => ({ creator: status, moderator: status, orgAdmin: status, globalAdmin: status });

describe('access rules per route and role', () => {
  let service: TestService;
  const headers: Record<Role, Record<string, string>> = {} as never;
  let counter = 0;
  const unique = (prefix: string) => `${prefix}-${++counter}`;

  const call = (role: Role, method: string, path: string, json?: unknown) =>
    service.request(method, path, { headers: headers[role], ...(json !== undefined ? { json } : {}) });

  /** A fresh box (created by `creator`) with one version, provider, architecture and file. */
  async function freshBox(options: { isPublic: boolean; upload?: boolean }): Promise<BoxPath> {
    const path = { org: 'acme', box: unique(options.isPublic ? 'pub' : 'priv'), version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
    await createBoxPath(service, '', path, { isPublic: options.isPublic });
    if (options.upload !== false) {
      const uploaded = await uploadRaw(service, path, await makeBox(), { headers: headers.creator });
      expect(uploaded.status).toBe(201);
    }
    return path;
  }

  async function expectStatuses(expected: Record<Role, number>, attempt: (role: Role) => Promise<{ status: number; text: string }>) {
    const seen: Partial<Record<Role, number>> = {};
    for (const role of ROLES) seen[role] = (await attempt(role)).status;
    expect(seen).toEqual(expected);
  }

  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'acme');
    await createOrganization(service, 'other');
    // The global admin created both (and became their admin): leave acme so only the global role counts.
    expect((await service.request('DELETE', '/api/organization/acme/members/admin', { token: service.adminToken })).status).toBe(200);
    headers.anonymous = {};
    headers.globalAdmin = { 'x-access-token': service.adminToken };
    for (const [role, memberRole] of [['outsider', null], ['member', 'user'], ['creator', 'user'], ['moderator', 'moderator'], ['orgAdmin', 'admin']] as const) {
      const user = await service.createUser(role.toLowerCase());
      if (memberRole) await addMember(service, 'acme', user.username, memberRole);
      headers[role] = { 'x-access-token': user.token };
    }
    for (const [role, org] of [['serviceAccount', 'acme'], ['foreignServiceAccount', 'other']] as const) {
      const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: org } });
      expect(created.status).toBe(201);
      headers[role] = { authorization: `Bearer ${created.body.token}` };
    }
    // createBoxPath sends a session token; route it through the creator's.
    const original = service.request;
    service.request = (method, path, options = {}) => original(method, path, options.token === '' ? { ...options, token: headers.creator['x-access-token']! } : options);
  });
  afterAll(async () => service?.close());

  describe('reads', () => {
    const readRoutes: [string, (p: BoxPath) => string][] = [
      ['box', (p) => `/api/organization/${p.org}/box/${p.box}`],
      ['version list', (p) => `/api/organization/${p.org}/box/${p.box}/version`],
      ['version', (p) => `/api/organization/${p.org}/box/${p.box}/version/${p.version}`],
      ['provider list', (p) => `/api/organization/${p.org}/box/${p.box}/version/${p.version}/provider`],
      ['provider', (p) => `/api/organization/${p.org}/box/${p.box}/version/${p.version}/provider/${p.provider}`],
      ['architecture list', (p) => `/api/organization/${p.org}/box/${p.box}/version/${p.version}/provider/${p.provider}/architecture`],
      ['architecture', (p) => archPath(p)],
      ['file information', (p) => `${archPath(p)}/file`],
      ['metadata', (p) => `/api/organization/${p.org}/box/${p.box}/metadata`],
      ['metadata for Vagrant 2.3', (p) => `/${p.org}/${p.box}`],
      ['metadata for Vagrant 2.4', (p) => `/api/v2/vagrant/${p.org}/${p.box}`],
      ['download', (p) => `/${p.org}/boxes/${p.box}/versions/${p.version}/providers/${p.provider}/${p.arch}/vagrant.box`],
      ['download (API path)', (p) => `${archPath(p)}/file/download`],
    ];
    let publicBox: BoxPath;
    let privateBox: BoxPath;
    beforeAll(async () => {
      publicBox = await freshBox({ isPublic: true });
      privateBox = await freshBox({ isPublic: false });
    });

    for (const [name, url] of readRoutes) {
      it(`GET ${name}: anyone for a public box, members only for a private one`, async () => {
        await expectStatuses(expectFor(everyone), (role) => call(role, 'GET', url(publicBox)));
        await expectStatuses(expectFor(readers), (role) => call(role, 'GET', url(privateBox)));
      });
    }

    it('HEAD of the Vagrant metadata and the download follow the same rules', async () => {
      await expectStatuses(expectFor(readers), (role) => call(role, 'HEAD', `/acme/${privateBox.box}`));
      await expectStatuses(expectFor(readers), (role) => call(role, 'HEAD', `/acme/boxes/${privateBox.box}/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`));
      await expectStatuses(expectFor(everyone), (role) => call(role, 'HEAD', `/acme/${publicBox.box}`));
    });

    it('POST get-download-link: like reading the file', async () => {
      await expectStatuses(expectFor(everyone), (role) => call(role, 'POST', `${archPath(publicBox)}/file/get-download-link`));
      await expectStatuses(expectFor(readers), (role) => call(role, 'POST', `${archPath(privateBox)}/file/get-download-link`));
    });

    it('lists show private boxes to members only', async () => {
      for (const role of ROLES) {
        const list = await call(role, 'GET', '/api/organization/acme/box?per_page=100');
        expect(list.status).toBe(200);
        const names = (list.body as { name: string }[]).map((b) => b.name);
        expect(names).toContain(publicBox.box);
        expect(names.includes(privateBox.box), role).toBe(role in readers);
      }
    });

    it('a private organization and everything in it is for its members only', async () => {
      await createOrganization(service, 'secret-org', { isPublic: false });
      const admin = { 'x-access-token': service.adminToken };
      expect((await service.request('PUT', '/api/organization/secret-org/members/member', { headers: admin, json: { role: 'user' } })).status).toBe(200);
      expect((await call('member', 'POST', '/api/organization/secret-org/box', { name: 'inside', isPublic: true })).status).toBe(201);
      for (const url of ['/api/organization/secret-org', '/api/organization/secret-org/box', '/api/organization/secret-org/box/inside', '/secret-org/inside']) {
        expect((await call('anonymous', 'GET', url)).status, url).toBe(401);
        expect((await call('outsider', 'GET', url)).status, url).toBe(403);
        expect((await call('member', 'GET', url)).status, url).toBe(200);
      }
      const visible = async (role: Role) => ((await call(role, 'GET', '/api/organization?per_page=100')).body as { name: string }[]).map((o) => o.name);
      expect(await visible('outsider')).not.toContain('secret-org');
      expect(await visible('member')).toContain('secret-org');
      expect(await visible('globalAdmin')).toContain('secret-org');
    });

    it('GET organization and the organization list: anyone for a public organization', async () => {
      await expectStatuses(expectFor(everyone), (role) => call(role, 'GET', '/api/organization/acme'));
      await expectStatuses(expectFor(everyone), (role) => call(role, 'GET', '/api/organization'));
    });

    it('GET members: members and global admins', async () => {
      await expectStatuses(expectFor(readers), (role) => call(role, 'GET', '/api/organization/acme/members'));
    });
  });

  describe('writes', () => {
    it('POST organization: global admins only', async () => {
      await expectStatuses(expectFor({ globalAdmin: 201 }), (role) => call(role, 'POST', '/api/organization', { name: unique('org') }));
    });

    it('PUT/PATCH organization: its admins and global admins', async () => {
      await expectStatuses(expectFor({ orgAdmin: 200, globalAdmin: 200 }), (role) => call(role, 'PATCH', '/api/organization/acme', { description: `by ${role}` }));
      await expectStatuses(expectFor({ orgAdmin: 200, globalAdmin: 200 }), (role) => call(role, 'PUT', '/api/organization/acme', { email: `${role.toLowerCase()}@example.test` }));
    });

    it('DELETE organization: global admins only', async () => {
      await expectStatuses(expectFor({ globalAdmin: 200 }), async (role) => {
        const name = unique('doomed');
        await createOrganization(service, name);
        for (const [user, memberRole] of [['member', 'user'], ['creator', 'user'], ['moderator', 'moderator'], ['orgadmin', 'admin']]) {
          await service.request('PUT', `/api/organization/${name}/members/${user}`, { token: service.adminToken, json: { role: memberRole } });
        }
        return call(role, 'DELETE', `/api/organization/${name}`);
      });
    });

    it('PUT member (as a plain user): org admins, moderators, global admins; only admins make moderators', async () => {
      await expectStatuses(expectFor({ moderator: 200, orgAdmin: 200, globalAdmin: 200 }), async (role) => {
        const user = await service.createUser(unique('newbie'));
        return call(role, 'PUT', `/api/organization/acme/members/${user.username}`, { role: 'user' });
      });
      await expectStatuses(expectFor({ orgAdmin: 200, globalAdmin: 200 }), async (role) => {
        const user = await service.createUser(unique('promoted'));
        return call(role, 'PUT', `/api/organization/acme/members/${user.username}`, { role: 'moderator' });
      });
    });

    it('DELETE member: org admins, global admins, and moderators for plain users', async () => {
      await expectStatuses(expectFor({ moderator: 200, orgAdmin: 200, globalAdmin: 200 }), async (role) => {
        const user = await service.createUser(unique('leaver'));
        await addMember(service, 'acme', user.username, 'user');
        return call(role, 'DELETE', `/api/organization/acme/members/${user.username}`);
      });
      // A moderator can't remove another moderator.
      expect((await call('moderator', 'DELETE', '/api/organization/acme/members/orgadmin')).status).toBe(403);
    });

    it('POST box: any member of the organization, its service account, global admins', async () => {
      await expectStatuses(expectFor({ member: 201, creator: 201, moderator: 201, orgAdmin: 201, globalAdmin: 201, serviceAccount: 201 }), (role) =>
        call(role, 'POST', '/api/organization/acme/box', { name: unique('box') }));
    });

    // Everything that changes a box or what is in it: the creator, moderators, org admins, global admins.
    const boxWrites: [string, (p: BoxPath) => [string, string, unknown?], number][] = [
      ['PUT box', (p) => ['PUT', `/api/organization/acme/box/${p.box}`, { description: 'changed' }], 200],
      ['PATCH box', (p) => ['PATCH', `/api/organization/acme/box/${p.box}`, { isPublic: true }], 200],
      ['DELETE box', (p) => ['DELETE', `/api/organization/acme/box/${p.box}`], 200],
      ['POST version', (p) => ['POST', `/api/organization/acme/box/${p.box}/version`, { versionNumber: '2.0.0' }], 201],
      ['PUT version', (p) => ['PUT', `/api/organization/acme/box/${p.box}/version/1.0.0`, { description: 'changed' }], 200],
      ['PATCH version', (p) => ['PATCH', `/api/organization/acme/box/${p.box}/version/1.0.0`, { status: 'revoked' }], 200],
      ['DELETE version', (p) => ['DELETE', `/api/organization/acme/box/${p.box}/version/1.0.0`], 200],
      ['POST provider', (p) => ['POST', `/api/organization/acme/box/${p.box}/version/1.0.0/provider`, { name: 'libvirt' }], 201],
      ['PUT provider', (p) => ['PUT', `/api/organization/acme/box/${p.box}/version/1.0.0/provider/virtualbox`, { description: 'changed' }], 200],
      ['DELETE provider', (p) => ['DELETE', `/api/organization/acme/box/${p.box}/version/1.0.0/provider/virtualbox`], 200],
      ['POST architecture', (p) => ['POST', `/api/organization/acme/box/${p.box}/version/1.0.0/provider/virtualbox/architecture`, { name: 'arm64' }], 201],
      ['PATCH architecture', (p) => ['PATCH', archPath(p), { defaultBox: true }], 200],
      ['DELETE architecture', (p) => ['DELETE', archPath(p)], 200],
      ['DELETE file', (p) => ['DELETE', `${archPath(p)}/file`], 200],
    ];
    for (const [name, request, status] of boxWrites) {
      it(`${name}: the creator, moderators, org admins, global admins`, async () => {
        await expectStatuses(expectFor(managers(status)), async (role) => {
          const path = await freshBox({ isPublic: true });
          const [method, url, json] = request(path);
          return call(role, method, url, json);
        });
      });
    }

    it('uploads (multipart and raw): the creator, moderators, org admins, global admins', async () => {
      const box = await makeBox();
      await expectStatuses(expectFor(managers(201)), async (role) => {
        const path = await freshBox({ isPublic: true, upload: false });
        return uploadRaw(service, path, box, { headers: headers[role] });
      });
      await expectStatuses(expectFor(managers(201)), async (role) => {
        const path = await freshBox({ isPublic: true, upload: false });
        const form = new FormData();
        form.append('file', new Blob([box]), 'vagrant.box');
        return service.request('POST', `${archPath(path)}/file`, { headers: headers[role], body: form });
      });
    });

    it('a service account manages the boxes it created, in its organization only', async () => {
      const key = headers.serviceAccount;
      const created = await service.request('POST', '/api/organization/acme/box', { headers: key, json: { name: 'by-robot' } });
      expect(created.status).toBe(201);
      expect((await service.request('POST', '/api/organization/acme/box/by-robot/version', { headers: key, json: { version_number: '0.1.0' } })).status).toBe(201);
      expect((await service.request('PATCH', '/api/organization/acme/box/by-robot', { headers: key, json: { description: 'mine' } })).status).toBe(200);
      // The member who did not create it can't; the service account can't act in another organization.
      expect((await call('member', 'PATCH', '/api/organization/acme/box/by-robot', { description: 'not mine' })).status).toBe(403);
      expect((await service.request('POST', '/api/organization/other/box', { headers: key, json: { name: 'elsewhere' } })).status).toBe(403);
    });

    it('a moderator service account manages any box of its organization', async () => {
      const created = await service.request('POST', '/api/service-accounts', { headers: headers.orgAdmin, json: { organization: 'acme', role: 'moderator' } });
      expect(created.status).toBe(201);
      const path = await freshBox({ isPublic: false });
      const response = await service.request('PATCH', `/api/organization/acme/box/${path.box}`, { headers: { authorization: `Bearer ${created.body.token}` }, json: { description: 'moderated' } });
      expect(response.status).toBe(200);
    });
  });

  describe('accounts and service accounts', () => {
    it('GET /api/user and /api/user/profile: any signed-in caller', async () => {
      const signedIn = Object.fromEntries(ROLES.filter((r) => r !== 'anonymous').map((r) => [r, 200]));
      await expectStatuses(expectFor(signedIn), (role) => call(role, 'GET', '/api/user'));
      await expectStatuses(expectFor(signedIn), (role) => call(role, 'GET', '/api/user/profile'));
      const profile = await call('moderator', 'GET', '/api/user/profile');
      expect(profile.body).toMatchObject({ username: 'moderator', roles: ['user'], organization: 'acme', organizations: expect.arrayContaining([{ name: 'acme', role: 'moderator' }]) });
      const robot = await call('serviceAccount', 'GET', '/api/user');
      expect(robot.body).toMatchObject({ roles: ['service_account'], organization: 'acme' });
    });

    it('POST service account: global admins and admins of that organization', async () => {
      await expectStatuses(expectFor({ orgAdmin: 201, globalAdmin: 201 }), (role) => call(role, 'POST', '/api/service-accounts', { organization: 'acme', expirationDays: 30 }));
    });

    it('GET service accounts: signed-in users see their own; keys are never shown again', async () => {
      const users = { outsider: 200, member: 200, creator: 200, moderator: 200, orgAdmin: 200, globalAdmin: 200 };
      await expectStatuses(expectFor(users), (role) => call(role, 'GET', '/api/service-accounts'));
      const own = await call('orgAdmin', 'GET', '/api/service-accounts');
      expect(own.body.length).toBeGreaterThan(0);
      expect(JSON.stringify(own.body)).not.toContain('bxy_sa_');
      expect((await call('member', 'GET', '/api/service-accounts')).body).toEqual([]);
    });

    it('DELETE service account: its creator, admins of its organization, global admins; its key stops working', async () => {
      await expectStatuses(expectFor({ orgAdmin: 200, globalAdmin: 200 }), async (role) => {
        const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } });
        return call(role, 'DELETE', `/api/service-accounts/${created.body.id}`);
      });
      const created = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } });
      const key = { authorization: `Bearer ${created.body.token}` };
      expect((await service.request('GET', '/api/user', { headers: key })).status).toBe(200);
      expect((await service.request('DELETE', `/api/service-accounts/${created.body.id}`, { token: service.adminToken })).status).toBe(200);
      const after = await service.request('GET', '/api/user', { headers: key });
      expect(after.status).toBe(401);
      expect(after.headers.get('www-authenticate')).toContain('invalid_token');
    });

    it('POST signout: the session token is refused afterwards', async () => {
      const user = await service.createUser('signs-out');
      expect((await service.request('GET', '/api/user', { token: user.token })).status).toBe(200);
      expect((await service.request('POST', '/api/auth/signout', { token: user.token })).status).toBe(200);
      const after = await service.request('GET', '/api/user', { token: user.token });
      expect(after.status).toBe(401);
      expect(after.body.detail).toContain('revoked');
      expect((await call('anonymous', 'POST', '/api/auth/signout')).status).toBe(401);
    });
  });
});
