// A box page's versions are rendered once and kept while the box's tree is unchanged (versions-section.ts). Each
// change below is made through the API after the page was cached, and the next page must show it: a version added,
// released, described, a file uploaded (its sha256), a provider deleted, the box renamed (its links). Members see
// unreleased versions and those who manage the box its panels: neither may leak into another caller's page.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '../testing/boxes.ts';
import { addMember, createBoxPath, createOrganization, startTestService, uploadRaw, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

describe("a box page's kept versions", () => {
  let service: TestService;
  let memberToken: string;
  const path = { org: 'kept', box: 'cached', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
  const api = '/api/organization/kept/box/cached';

  const page = async (box = 'cached', token?: string) => {
    const response = await service.request('GET', `/kept/boxes/${box}`, {
      headers: { accept: 'text/html', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    });
    expect(response.status).toBe(200);
    return response.text;
  };
  const versionsOn = (text: string) => [...text.matchAll(/<h3 id="v-\d+">v([^<]+)<\/h3>/g)].map((m) => m[1]);
  const change = async (method: string, url: string, json?: Record<string, unknown>) => {
    const response = await service.request(method, url, { token: service.adminToken, ...(json ? { json } : {}) });
    expect(response.status, response.text).toBeLessThan(300);
  };

  beforeAll(async () => {
    service = await startTestService();
    await createOrganization(service, 'kept');
    await createBoxPath(service, service.adminToken, path, { isPublic: true });
    await change('PATCH', `${api}/version/1.0.0`, { status: 'active' });
    const member = await service.createUser('kept-member');
    await addMember(service, 'kept', member.username, 'user');
    memberToken = await service.signIn('kept-member', USER_PASSWORD);
  });

  afterAll(async () => {
    await service?.close();
  });

  it('shows each change of the tree on the next page', async () => {
    expect(versionsOn(await page())).toEqual(['1.0.0']);
    await change('POST', `${api}/version`, { versionNumber: '2.0.0', status: 'unreleased' });
    // The anonymous page was kept without 2.0.0: a member sees it, anonymous visitors still do not.
    expect(versionsOn(await page('cached', memberToken))).toEqual(['2.0.0', '1.0.0']);
    expect(versionsOn(await page())).toEqual(['1.0.0']);
    await change('PATCH', `${api}/version/2.0.0`, { status: 'active' });
    expect(versionsOn(await page())).toEqual(['2.0.0', '1.0.0']);

    await change('PATCH', `${api}/version/1.0.0`, { description: 'Notes of the day' });
    expect(await page()).toContain('Notes of the day');

    const box = await makeBox();
    expect((await uploadRaw(service, path, box, { token: service.adminToken })).status).toBe(201);
    expect(await page()).toContain(sha256(box));

    await change('DELETE', `${api}/version/1.0.0/provider/virtualbox`);
    const afterDelete = await page();
    expect(afterDelete).not.toContain(sha256(box));
    expect(afterDelete).toContain('No providers yet.');

    // The links in the list name the box: those of the manage panels, kept before the rename, must not.
    expect(await page('cached', service.adminToken)).toContain(`${api}/version/2.0.0`);
    await change('PATCH', api, { name: 'renamed' });
    const renamed = await page('renamed', service.adminToken);
    expect(versionsOn(renamed)).toEqual(['2.0.0', '1.0.0']);
    expect(renamed).toContain('/api/organization/kept/box/renamed/version/2.0.0');
    expect(renamed).not.toContain('/box/cached/');
    await change('PATCH', '/api/organization/kept/box/renamed', { name: 'cached' });
  });

  it('keeps the manage panels on the pages of those who may manage the box only', async () => {
    expect(await page('cached', service.adminToken)).toContain('Manage v1.0.0');
    expect(await page('cached', memberToken)).not.toContain('Manage v1.0.0');
    expect(await page()).not.toContain('Manage v1.0.0');
  });
});
