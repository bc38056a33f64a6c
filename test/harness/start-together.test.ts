import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { startMinio } from './minio.ts';
import { startTogether } from './start-together.ts';

it('stops the components that started when another one fails to start', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'start-together-'));
  let endpoint = '';
  const minio = startMinio({ dir, accessKey: `t${randomBytes(4).toString('hex')}`, secretKey: randomBytes(18).toString('base64url') }).then((m) => {
    endpoint = m.endpoint;
    return m;
  });
  await expect(startTogether([minio, Promise.reject(new Error('postgres did not start'))] as const)).rejects.toThrow('postgres did not start');
  expect(endpoint).not.toBe('');
  await expect(fetch(`${endpoint}/minio/health/live`)).rejects.toThrow();
  await rm(dir, { recursive: true, force: true });
});
