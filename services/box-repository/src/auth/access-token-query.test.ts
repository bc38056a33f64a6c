// `?access_token=` is a credential on every route (README, "Access rules"): each documented GET answers with it what
// it answers with the same token in `x-access-token`, for a global admin and for a plain member alike. The webhook
// lists once refused it as an unknown query member (422).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createBoxPath, createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

const path = { org: 'acme', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' };
const values: Record<string, string> = { ...path, id: '1', file: 'none.box', file_name: 'none.box', username: 'member', name: 'none' };

let service: TestService;
let memberToken: string;
beforeAll(async () => {
  service = await startTestService();
  await createOrganization(service, path.org);
  await createBoxPath(service, service.adminToken, path);
  memberToken = (await service.createUser('member')).token;
  await addMember(service, path.org, 'member', 'user');
  expect(
    (
      await service.request('POST', '/api/admin/webhooks', {
        token: service.adminToken,
        json: { url: 'https://hooks.example.com/x', events: ['box.uploaded'], secret: 'a-secret-of-some-length' },
      })
    ).status,
  ).toBe(201);
});
afterAll(() => service?.close());

/** Every documented GET, its `{param}`s filled in from the seeded path (or a value naming nothing). */
async function documentedGets(): Promise<string[]> {
  const description = (await service.request('GET', '/openapi.json')).body as { paths: Record<string, Record<string, unknown>> };
  return Object.entries(description.paths)
    .filter(([, operations]) => 'get' in operations)
    .map(([template]) =>
      template
        .split('/')
        .map((segment) => (segment.startsWith('{') && segment.endsWith('}') ? encodeURIComponent(values[segment.slice(1, -1)] ?? 'none') : segment))
        .join('/'),
    );
}

describe('?access_token=', () => {
  it.each([
    ['a global admin', () => service.adminToken],
    ['a member', () => memberToken],
  ])('is accepted like x-access-token on every documented GET, for %s', async (_who, token) => {
    const urls = await documentedGets();
    expect(urls).toEqual(expect.arrayContaining(['/api/admin/webhooks', '/api/admin/webhooks/1/deliveries', '/api/user']));
    const differ: string[] = [];
    for (const url of urls) {
      const header = await service.request('GET', url, { token: token() });
      const query = await service.request('GET', `${url}${url.includes('?') ? '&' : '?'}access_token=${encodeURIComponent(token())}`);
      if (query.status !== header.status) differ.push(`${url}: x-access-token ${header.status}, ?access_token= ${query.status} ${query.text.slice(0, 200)}`);
    }
    expect(differ).toEqual([]);
  });

  it('is refused like a bad x-access-token (401) on the webhook lists too', async () => {
    for (const url of ['/api/admin/webhooks', '/api/admin/webhooks/1/deliveries', '/api/user']) {
      expect((await service.request('GET', `${url}?access_token=not-a-token`)).status, url).toBe(401);
      expect((await service.request('GET', url, { token: 'not-a-token' })).status, url).toBe(401);
    }
  });
});
