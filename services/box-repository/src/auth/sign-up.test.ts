// Self sign-up can be turned off (issue 27): `auth.sign_up` is `open` (anyone), `invited` (only with an invitation
// token from an organization's moderator or admin; the default) or `off` (no sign-up at all: accounts come from an
// identity provider, and the admin). The API and the console's form refuse in their own shapes; the rule is checked
// for the callers that must pass (anyone when open, the invited when invited) and those that must not.
import { loadConfig } from '@boxyard/kit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { boxRepositoryConfigSchema } from '../config.ts';
import { createOrganization, startTestService, USER_PASSWORD, type TestService } from '../testing/test-service.ts';

const services: Partial<Record<'open' | 'invited' | 'off', TestService>> = {};

beforeAll(async () => {
  for (const mode of ['open', 'invited', 'off'] as const) {
    const service = await startTestService({ config: { auth: { sign_up: mode } } });
    await createOrganization(service, 'acme');
    services[mode] = service;
  }
}, 120_000);
afterAll(async () => Promise.all(Object.values(services).map((s) => s.close())));

let counter = 0;
const fresh = () => `newcomer-${++counter}`;
const signUp = (service: TestService, username: string, invitationToken?: string) =>
  service.request('POST', '/api/auth/signup', {
    json: { username, email: `${username}@example.test`, password: USER_PASSWORD, ...(invitationToken ? { invitationToken } : {}) },
  });
const invitationFor = async (service: TestService, username: string): Promise<string> => {
  const invited = await service.request('POST', '/api/auth/invite', {
    token: service.adminToken,
    json: { email: `${username}@example.test`, organizationName: 'acme' },
  });
  expect(invited.status).toBe(201);
  return invited.body.invitation_token as string;
};
const consoleSignUp = (service: TestService, username: string) =>
  fetch(`${service.url}/console/sign-up`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', origin: service.url },
    redirect: 'manual',
    body: new URLSearchParams({ username, email: `${username}@example.test`, password: USER_PASSWORD }).toString(),
  });

describe('auth.sign_up', () => {
  it('open: anyone signs up', async () => {
    expect((await signUp(services.open!, fresh())).status).toBe(201);
  });

  it('invited: refused without an invitation (problem details naming the key, API and console); an invitation passes', async () => {
    const service = services.invited!;
    const refused = await signUp(service, fresh());
    expect(refused.status).toBe(403);
    expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(refused.body).toMatchObject({ status: 403, type: expect.stringContaining('/forbidden'), detail: expect.stringContaining('auth.sign_up') });
    const page = await consoleSignUp(service, fresh());
    expect(page.status).toBe(403);
    expect(await page.text()).toContain('invitation');
    // A signed-in caller is no exception.
    const signedIn = await service.request('POST', '/api/auth/signup', {
      token: service.adminToken,
      json: { username: fresh(), email: 'x@example.test', password: USER_PASSWORD },
    });
    expect(signedIn.status).toBe(403);

    const invited = fresh();
    expect((await signUp(service, invited, await invitationFor(service, invited))).status).toBe(201);
    expect((await service.request('POST', '/api/auth/signin', { json: { username: invited, password: USER_PASSWORD } })).status).toBe(200);
  });

  it('off: refused even with an invitation; nothing is created', async () => {
    const service = services.off!;
    const username = fresh();
    const refused = await signUp(service, username, await invitationFor(service, username));
    expect(refused.status).toBe(403);
    expect(refused.body.detail).toContain('auth.sign_up');
    expect((await service.request('GET', `/api/admin/users/${username}`, { token: service.adminToken })).status).toBe(404);
  });

  it('defaults to invited; a bad value stops start-up naming the key', () => {
    const env = {
      BOXYARD_DATABASE__URL: 'postgres://x/y',
      BOXYARD_STORAGE__DRIVER: 'local',
      BOXYARD_STORAGE__ROOT: '/tmp/x',
      BOXYARD_SESSION__SECRET: 'k'.repeat(40),
    };
    expect(loadConfig(boxRepositoryConfigSchema, { env }).auth.sign_up).toBe('invited');
    expect(loadConfig(boxRepositoryConfigSchema, { env: { ...env, BOXYARD_AUTH__SIGN_UP: 'off' } }).auth.sign_up).toBe('off');
    expect(() => loadConfig(boxRepositoryConfigSchema, { env: { ...env, BOXYARD_AUTH__SIGN_UP: 'everyone' } })).toThrow(/auth\.sign_up/);
  });
});
