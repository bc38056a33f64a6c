// `boxyard dev` and `boxyard serve file-share` through the exported serviceDefinition: local storage under the
// home directory, the first admin's generated password printed once, data kept across restarts; and a YAML
// config with secrets read from files.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createTestDatabase } from '@boxyard/test/harness/fixtures.ts';
import { serviceDefinition } from './service.ts';
import { basic, sharedSecret, upload } from './testing/test-share.ts';

describe('serviceDefinition', () => {
  const saved = process.env.BOXYARD_SERVER__PORT;
  beforeEach(() => {
    process.env.BOXYARD_SERVER__PORT = '0'; // not the dev port 3001: other runs may hold it
  });
  afterEach(() => {
    if (saved === undefined) delete process.env.BOXYARD_SERVER__PORT;
    else process.env.BOXYARD_SERVER__PORT = saved;
    vi.restoreAllMocks();
  });

  it('dev: prints a generated admin password once and keeps files across restarts', async () => {
    const home = await mkdtemp(join(tmpdir(), 'fs-dev-'));
    const secrets = new Map<string, string>();
    const context = {
      home,
      databaseUrl: await createTestDatabase('fsdev'),
      adminPassword: undefined,
      secret: async (name: string) => {
        if (!secrets.has(name)) secrets.set(name, sharedSecret());
        return secrets.get(name)!;
      },
    };
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    const first = await serviceDefinition.dev(context);
    const printed = log.mock.calls.map((call) => String(call[0])).join('\n');
    const password = /password: (\S+)/.exec(printed)?.[1];
    expect(password).toBeDefined();
    expect(secrets.has('file_share_session_secret')).toBe(true);
    const admin = basic('admin', password!);
    expect((await upload(first.url, '/kept/file.txt', 'survives', admin)).status).toBe(201);
    await first.close();

    log.mockClear();
    const second = await serviceDefinition.dev(context);
    expect(log.mock.calls.map((call) => String(call[0])).join('\n')).not.toContain('password:');
    expect(await (await fetch(`${second.url}/kept/file.txt`, { headers: { authorization: admin } })).text()).toBe('survives');
    await second.close();
  });

  it('serve: starts from a YAML file with secrets in files', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'fs-serve-'));
    await writeFile(join(dir, 'session-secret'), `${sharedSecret()}\n`);
    await writeFile(join(dir, 'admin-password'), 'Serve-Admin-42\n');
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'store'));
    await writeFile(
      join(dir, 'config.yaml'),
      [
        'server: {host: 127.0.0.1}',
        `database: {url: "${await createTestDatabase('fsserve')}"}`,
        `storage: {driver: local, root: "${join(dir, 'store')}"}`,
        `session: {secret_file: "${join(dir, 'session-secret')}"}`,
        `admin: {username: root, password_file: "${join(dir, 'admin-password')}"}`,
        'uploads: {max_bytes: 1048576}',
        'rate_limiting: {max_requests: 1000}',
      ].join('\n'),
    );
    const running = await serviceDefinition.serve(join(dir, 'config.yaml'));
    try {
      expect(running.name).toBe('file-share');
      expect((await fetch(`${running.url}/health/ready`)).status).toBe(200);
      const response = await fetch(`${running.url}/`, { headers: { authorization: basic('root', 'Serve-Admin-42'), accept: 'application/json' } });
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-limit')).toBe('1000');
    } finally {
      await running.close();
    }
  });
});
