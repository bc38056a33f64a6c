// Inputs the fuzzer (test/fuzz) found answered with a 500 or outside the OpenAPI description: each is a caller's
// mistake and gets a clear 4xx in the problem-details shape.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestService, type TestService } from '../testing/service.ts';

let service: TestService;
beforeAll(async () => (service = await startTestService()));
afterAll(() => service?.close());

describe('numbers past what the database holds', () => {
  it('refuses a page number past 2^63 with 422, not 500', async () => {
    for (const page of ['9223372036854775808', '99999999999999999999', '1e400']) {
      const res = await service.request('GET', `/api/organization?page=${page}`, { token: service.adminToken });
      expect(res.status, `page=${page}`).toBe(422);
      expect(res.body).toMatchObject({ errors: [expect.objectContaining({ pointer: '/query/page' })] });
    }
  });

  it('refuses an organization id past 2^53 with 422, not 500', async () => {
    const res = await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization_id: 2 ** 63 } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ errors: [expect.objectContaining({ pointer: '/organization_id', rule: 'maximum' })] });
  });
});
