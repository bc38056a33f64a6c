// Every refusal of the publishing API, at the request level, on both storage drivers: the API's error shape
// ({errors, success: false}) with a message naming the problem, and nothing half-published (no file, no active
// version, no object left after the sweep). Also a cut upload, and the same publish completing afterwards.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeBox, sha256 } from '../testing/boxes.ts';
import { addMember, createOrganization, startTestService, type TestService } from '../testing/test-service.ts';

const B = '/api/v1/box/acme/t';

describe.each(['local', 's3'] as const)('publishing API refusals (%s storage)', (storage) => {
  let service: TestService;
  let publisher: string;
  let box: Buffer;
  const cloud = (method: string, path: string, token: string | undefined, json?: unknown) =>
    service.request<any>(method, path, {
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      ...(json !== undefined ? { json } : {}),
    });
  const put = (url: string, body: Buffer | ReadableStream, headers: Record<string, string> = {}) =>
    fetch(url, { method: 'PUT', body, headers, ...(body instanceof ReadableStream ? { duplex: 'half' } : {}) } as RequestInit);
  const refused = (response: { status: number; body: { errors: string[]; success: boolean } }, status: number, message: RegExp) => {
    expect(response.status).toBe(status);
    expect(response.body.success).toBe(false);
    expect(response.body.errors[0]).toMatch(message);
  };
  const newVersion = async (version: string, checksum?: string) => {
    expect((await cloud('POST', `${B}/versions`, publisher, { version: { version } })).status).toBe(200);
    const provider = await cloud('POST', `${B}/version/${version}/providers`, publisher, {
      provider: { name: 'virtualbox', ...(checksum ? { checksum, checksum_type: 'sha256' } : {}) },
    });
    expect(provider.status).toBe(200);
  };
  const nothingPublished = async (version: string) => {
    const shown = await cloud('GET', `${B}/version/${version}`, publisher);
    expect(shown.body.status).toBe('unreleased');
    expect(shown.body.providers.every((p: { download_url: string | null }) => p.download_url === null)).toBe(true);
    refused(await cloud('PUT', `${B}/version/${version}/release`, publisher), 409, /has no box file yet/);
  };
  const noStrayObjects = async () => {
    await service.sql('update storage_cleanup set delete_after = now()');
    await service.running.ctx.cleanup.sweep();
    const keys = (await service.sql<{ storage_key: string }>('select storage_key from files')).map((r) => r.storage_key);
    const stray = (await service.storedObjects()).filter((k) => !keys.some((key) => k.endsWith(key)));
    expect(stray).toEqual([]);
  };

  beforeAll(async () => {
    service = await startTestService({ storage });
    await createOrganization(service, 'acme');
    await createOrganization(service, 'other');
    publisher = (await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'acme' } })).body.token;
    box = await makeBox({ fillerBytes: 64 * 1024 });
    expect((await cloud('POST', '/api/v1/boxes', publisher, { box: { username: 'acme', name: 't', is_private: false } })).status).toBe(200);
  });
  afterAll(async () => service?.close());

  it("refuses another organization's token and a read-only member", async () => {
    await newVersion('0.1.0');
    const stranger = (await service.request('POST', '/api/service-accounts', { token: service.adminToken, json: { organization: 'other' } })).body.token;
    refused(
      await cloud('POST', `${B}/versions`, stranger, { version: { version: '0.2.0' } }),
      403,
      /Only the creator of box 'acme\/t', or a moderator or admin of 'acme', may change it/,
    );
    refused(await cloud('GET', `${B}/version/0.1.0/provider/virtualbox/upload`, stranger), 404, /Version '0.1.0' of box 'acme\/t' not found/);
    const reader = await service.createUser('reader');
    await addMember(service, 'acme', 'reader', 'user');
    refused(await cloud('GET', `${B}/version/0.1.0/provider/virtualbox/upload/direct`, reader.token), 403, /Only the creator of box 'acme\/t'/);
    refused(await cloud('PUT', `${B}/version/0.1.0/release`, reader.token), 403, /Only the creator/);
    refused(await cloud('DELETE', B, reader.token), 403, /Only the creator/);
    refused(await cloud('POST', `${B}/versions`, undefined, { version: { version: '0.2.0' } }), 401, /Authentication required/);
    await nothingPublished('0.1.0');
  });

  it('refuses a reused and an expired upload URL', async () => {
    await newVersion('1.0.0');
    const { upload_path: url } = (await cloud('GET', `${B}/version/1.0.0/provider/virtualbox/upload`, publisher)).body;
    expect((await put(url, box)).status).toBe(200);
    const again = await put(url, box);
    expect(again.status).toBe(410);
    expect(((await again.json()) as { errors: string[] }).errors[0]).toMatch(/already been used/);
    await newVersion('1.0.1');
    const { upload_path: late } = (await cloud('GET', `${B}/version/1.0.1/provider/virtualbox/upload`, publisher)).body;
    await service.sql("update upload_grants set expires_at = now() - interval '1 second'");
    const expired = await put(late, box);
    expect(expired.status).toBe(410);
    expect(((await expired.json()) as { errors: string[] }).errors[0]).toMatch(/expired/);
    await nothingPublished('1.0.1');
    await noStrayObjects();
  });

  it("refuses a callback before the bytes arrived, and one whose bytes were sent to another provider's URL", async () => {
    await newVersion('2.0.0');
    expect((await cloud('POST', `${B}/version/2.0.0/providers`, publisher, { provider: { name: 'libvirt' } })).status).toBe(200);
    const mine = (await cloud('GET', `${B}/version/2.0.0/provider/virtualbox/upload/direct`, publisher)).body;
    const theirs = (await cloud('GET', `${B}/version/2.0.0/provider/libvirt/upload/direct`, publisher)).body;
    refused(await cloud('PUT', new URL(mine.callback).pathname, publisher), 409, /No box file has arrived at the upload URL yet/);
    expect((await put(theirs.upload_path, box)).status).toBe(200);
    refused(await cloud('PUT', new URL(mine.callback).pathname, publisher), 409, /No box file has arrived/);
    expect((await cloud('PUT', new URL(theirs.callback).pathname, publisher)).status).toBe(200);
    const providers = (await cloud('GET', `${B}/version/2.0.0`, publisher)).body.providers;
    expect(providers.map((p: { name: string; download_url: string | null }) => [p.name, p.download_url !== null])).toEqual([
      ['libvirt', true],
      ['virtualbox', false],
    ]);
    // Bytes that arrive and are never called back for go with the sweep once the callback window has passed.
    if (storage === 's3') expect((await put(mine.upload_path, box)).status).toBe(200);
    await noStrayObjects();
    refused(await cloud('PUT', new URL(mine.callback).pathname, publisher), 409, /No box file has arrived/);
  });

  it('refuses bytes that do not match the checksum declared for the provider, direct and through the service', async () => {
    const declared = sha256(Buffer.from('another box'));
    for (const [version, direct] of [
      ['3.0.0', false],
      ['3.0.1', true],
    ] as const) {
      await newVersion(version, declared);
      const grant = (await cloud('GET', `${B}/version/${version}/provider/virtualbox/upload${direct ? '/direct' : ''}`, publisher)).body;
      const uploaded = await put(grant.upload_path, box);
      const mismatch = new RegExp(`Checksum mismatch: the uploaded bytes have sha256 ${sha256(box)}, not ${declared}`);
      // Through the service (local direct too) the PUT is refused; on s3 a direct upload is verified by its callback.
      if (!direct || storage === 'local')
        refused({ status: uploaded.status, body: (await uploaded.json()) as { errors: string[]; success: boolean } }, 422, mismatch);
      else refused(await cloud('PUT', new URL(grant.callback).pathname, publisher), 422, mismatch);
      if (direct) refused(await cloud('PUT', new URL(grant.callback).pathname, publisher), 410, /used up: Checksum mismatch/);
      await nothingPublished(version);
    }
    await noStrayObjects();
  });

  it('refuses a version string RubyGems would refuse and a box body in neither shape', async () => {
    refused(
      await cloud('POST', `${B}/versions`, publisher, { version: { version: '1.0.0-' } }),
      422,
      /Invalid version '1.0.0-': not a version RubyGems accepts/,
    );
    refused(await cloud('POST', `${B}/versions`, publisher, { version: '1.0.0' }), 422, /The version must be sent as/);
    refused(await cloud('POST', '/api/v1/boxes', publisher, { box: 'acme/u' }), 422, /The box must be sent as/);
    refused(await cloud('POST', '/api/v1/boxes', publisher, { name: 42, username: 'acme' }), 422, /The box must be sent as/);
    refused(await cloud('POST', '/api/v1/boxes', publisher, [1, 2]), 422, /The box must be sent as/);
    expect((await cloud('GET', '/api/v1/user/acme', publisher)).body.boxes.map((b: { name: string }) => b.name)).toEqual(['t']);
  });

  it('a cut upload leaves the version unreleased with no file, and the same publish then completes', async () => {
    await newVersion('4.0.0');
    const { upload_path: url } = (await cloud('GET', `${B}/version/4.0.0/provider/virtualbox/upload`, publisher)).body;
    const half = box.subarray(0, box.length >> 1);
    const cut = new ReadableStream({
      start(controller) {
        controller.enqueue(half);
        setTimeout(() => controller.error(new Error('cut by the test')), 200);
      },
    });
    await expect(put(url, cut, { 'content-length': String(box.length) })).rejects.toThrow();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await nothingPublished('4.0.0');
    await noStrayObjects();
    const grant = (await cloud('GET', `${B}/version/4.0.0/provider/virtualbox/upload/direct`, publisher)).body;
    expect((await put(grant.upload_path, box)).status).toBe(200);
    expect((await cloud('PUT', new URL(grant.callback).pathname, publisher)).status).toBe(200);
    expect((await cloud('PUT', `${B}/version/4.0.0/release`, publisher)).body.status).toBe('active');
    // A released version's file is not replaced through the publishing API.
    refused(
      await cloud('GET', `${B}/version/4.0.0/provider/virtualbox/upload`, publisher),
      409,
      /Version 4\.0\.0 is active and provider 'virtualbox' already has its box file/,
    );
  });
});
