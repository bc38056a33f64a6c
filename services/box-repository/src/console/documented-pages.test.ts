// The console's pages sit where the OpenAPI description's `/{org}/{box}` operation is (organization `console` is
// reserved for them), and a browser is sent from `/{org}/{box}` to the box's page: what those paths serve, HTML
// included, is declared there (schemathesis found the sign-up page undeclared).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMember, createBoxPath, createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

type Operation = { responses: Record<string, { content?: Record<string, unknown> }> };

let service: TestService;
let memberToken: string;
let operation: Operation;
beforeAll(async () => {
  service = await startTestService();
  await createOrganization(service, 'acme');
  await createBoxPath(service, service.adminToken, { org: 'acme', box: 'base', version: '1.0.0', provider: 'virtualbox', arch: 'amd64' }, { isPublic: true });
  memberToken = (await service.createUser('member')).token;
  await addMember(service, 'acme', 'member', 'user');
  const description = (await service.request('GET', '/openapi.json')).body as { paths: Record<string, { get: Operation }> };
  operation = description.paths['/{org}/{box}']!.get;
});
afterAll(() => service?.close());

const declared = (status: number) => Object.keys(operation.responses[String(status)]?.content ?? {});

describe('GET /{org}/{box} declares what its paths serve', () => {
  it.each([
    ['/console/sign-up', {}],
    ['/console/sign-in', {}],
    ['/console/users', {}],
    ['/console/users', { 'x-access-token': 'member' }],
    ['/console/webhooks', { 'x-access-token': 'admin' }],
    ['/acme/base', { accept: 'text/html' }],
    ['/acme/base', { accept: 'application/json' }],
    ['/acme/none', { accept: 'text/html' }],
  ])('%s %j', async (path, headers: Record<string, string>) => {
    const token = headers['x-access-token'] === 'member' ? memberToken : headers['x-access-token'] === 'admin' ? service.adminToken : undefined;
    // Redirects followed, as schemathesis does.
    const response = await fetch(`${service.url}${path}`, { headers: { ...headers, ...(token ? { 'x-access-token': token } : {}) } });
    const type = response.headers.get('content-type')!.split(';')[0]!;
    expect(declared(response.status), `${response.status} ${type}`).toContain(type);
  });
});
