// The Vagrant Cloud API v2 (Vagrant ≥ 2.4, packer-plugin-vagrant ≥ 1.1) at the request level — no such client
// ships in Debian 12: providers per architecture with `architecture` / `default_architecture`, the architecture
// segment in provider and upload paths, upload URLs and callbacks under /api/v2.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '../testing/boxes.ts';
import { createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

const V = '/api/v2/box/acme/multi/version/2.0.0';

describe('publishing API v2 with architectures', () => {
  let service: TestService;
  let key: string;
  const cloud = (method: string, path: string, json?: unknown) =>
    service.request<any>(method, path, { headers: { authorization: `Bearer ${key}` }, ...(json !== undefined ? { json } : {}) });
  const boxes: Record<'amd64' | 'arm64', Buffer> = { amd64: Buffer.alloc(0), arm64: Buffer.alloc(0) };

  beforeAll(async () => {
    service = await startTestService({ storage: 's3' });
    await createOrganization(service, 'acme');
    key = (await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } })).body.token;
    boxes.amd64 = await makeBox({ metadata: { provider: 'virtualbox', architecture: 'amd64' } });
    boxes.arm64 = await makeBox({ metadata: { provider: 'virtualbox', architecture: 'arm64' } });
  });
  afterAll(async () => service?.close());

  it('creates one provider entry per architecture and uploads each, direct and through the service', async () => {
    expect((await cloud('GET', '/api/v2/authenticate')).body.user.username).toMatch(/./);
    expect((await cloud('POST', '/api/v2/boxes', { box: { username: 'acme', name: 'multi', is_private: false } })).status).toBe(200);
    expect((await cloud('POST', '/api/v2/box/acme/multi/versions', { version: { version: '2.0.0' } })).body.status).toBe('unreleased');
    const amd = await cloud('POST', `${V}/providers`, {
      provider: { name: 'virtualbox', architecture: 'amd64', default_architecture: true, checksum: sha256(boxes.amd64), checksum_type: 'sha256' },
    });
    expect(amd.status).toBe(200);
    expect(amd.body).toMatchObject({ name: 'virtualbox', architecture: 'amd64', default_architecture: true, checksum: sha256(boxes.amd64) });
    expect(
      (await cloud('POST', `${V}/providers`, { provider: { name: 'virtualbox', architecture: 'arm64', default_architecture: false } })).body,
    ).toMatchObject({ architecture: 'arm64', default_architecture: false });
    const again = await cloud('POST', `${V}/providers`, { provider: { name: 'virtualbox', architecture: 'arm64' } });
    expect(again.status).toBe(409);
    expect(again.body.errors[0]).toMatch(/already has architecture 'arm64'/);

    const uploadedBytes = async () => (await service.running.app.metrics.getSingleMetric('boxyard_upload_bytes_total')!.get()).values[0]?.value ?? 0;
    const before = await uploadedBytes();
    const direct = (await cloud('GET', `${V}/provider/virtualbox/arm64/upload/direct`)).body;
    expect(new URL(direct.callback).pathname).toMatch(/^\/api\/v2\/uploads\//);
    expect((await fetch(direct.upload_path, { method: 'PUT', body: boxes.arm64 })).status).toBe(200);
    expect((await cloud('PUT', new URL(direct.callback).pathname)).status).toBe(200);
    // Counted as any upload is, though its bytes went to the object store directly.
    expect(await uploadedBytes()).toBe(before + boxes.arm64.length);
    const plain = (await cloud('GET', `${V}/provider/virtualbox/amd64/upload`)).body;
    expect(plain.callback).toBeUndefined();
    expect(
      (await fetch(plain.upload_path, { method: 'PUT', body: boxes.amd64, headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` } }))
        .status,
    ).toBe(200);

    // The same webhook event as any other upload, one per architecture.
    const events = await service.sql<{ data: { architecture: string; sha256: string } }>("select data from events where type = 'box.uploaded' order by id");
    expect(events.map((e) => [e.data.architecture, e.data.sha256])).toEqual([
      ['arm64', sha256(boxes.arm64)],
      ['amd64', sha256(boxes.amd64)],
    ]);
    expect((await cloud('PUT', `${V}/release`)).body.status).toBe('active');
    const shown = (await cloud('GET', '/api/v2/box/acme/multi')).body;
    expect(
      shown.current_version.providers.map((p: { architecture: string; default_architecture: boolean; checksum: string }) => [
        p.architecture,
        p.default_architecture,
        p.checksum,
      ]),
    ).toEqual([
      ['amd64', true, sha256(boxes.amd64)],
      ['arm64', false, sha256(boxes.arm64)],
    ]);
    expect((await cloud('GET', `${V}/provider/virtualbox/arm64`)).body).toMatchObject({
      architecture: 'arm64',
      download_url: expect.stringContaining('/arm64/'),
    });
    const metadata = await service.request('GET', '/acme/multi', { headers: { accept: 'application/json' } });
    expect(metadata.body.versions[0].providers.map((p: { architecture: string; checksum: string }) => [p.architecture, p.checksum]).sort()).toEqual([
      ['amd64', sha256(boxes.amd64)],
      ['arm64', sha256(boxes.arm64)],
    ]);
  });

  it('v1 shows the default architecture as the provider; v2 deletes one architecture', async () => {
    const v1 = (await cloud('GET', '/api/v1/box/acme/multi/version/2.0.0')).body;
    expect(v1.providers).toEqual([expect.objectContaining({ name: 'virtualbox', checksum: sha256(boxes.amd64) })]);
    expect(v1.providers[0].architecture).toBeUndefined();
    expect((await cloud('DELETE', `${V}/provider/virtualbox/arm64`)).status).toBe(200);
    const left = (await cloud('GET', V)).body.providers;
    expect(left.map((p: { architecture: string }) => p.architecture)).toEqual(['amd64']);
    const missing = await cloud('GET', `${V}/provider/virtualbox/arm64`);
    expect(missing.status).toBe(404);
    expect(missing.body).toMatchObject({ success: false, errors: [expect.stringMatching(/Architecture 'arm64'/)] });
  });
});
