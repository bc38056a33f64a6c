// `make bench`: throughput and memory, always as ratios against a baseline measured in the same run on the
// same machine (wall-clock numbers alone mean little on a shared 2-core box). Starts its own real components.
// `make bench ONLY=storage` runs one section.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from '../../services/boxyard/src/embedded-postgres.ts';
import { startMinio } from '../harness/minio.ts';
import { startTogether } from '../harness/start-together.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { benchAuth } from './auth.ts';
import { benchBoxRepository } from './box-repository.ts';
import { benchCluster } from './cluster.ts';
import { benchDownloads } from './downloads.ts';
import { benchFileShare } from './file-share.ts';
import { benchListing } from './listing.ts';
import { benchUploads } from './uploads.ts';
import { benchMemory } from './memory.ts';
import { benchMetadata } from './metadata.ts';
import { benchOperator } from './operator.ts';
import { benchStorage } from './storage.ts';
import { benchTerminal } from './terminal.ts';
import { benchTracing } from './tracing.ts';

const sections: { name: string; title: string; run: (env: BenchEnv) => Promise<BenchRow[]> }[] = [
  { name: 'storage', title: 'storage layer (256 MiB object)', run: (env) => benchStorage({ minio: env.minio }) },
  { name: 'metadata', title: 'Vagrant metadata (box with 3 versions, 32 clients) vs a static file server', run: benchMetadata },
  { name: 'downloads', title: 'box downloads (512 MiB, 1 and 4 streams) vs a static file server / a direct S3 GET', run: benchDownloads },
  { name: 'uploads', title: 'box uploads (512 MiB) vs min(sha256, storage write) of the same run', run: benchUploads },
  { name: 'box-repository', title: 'box repository (1 GiB transfers, 5 GiB upload, metadata)', run: benchBoxRepository },
  { name: 'file-share', title: 'file share (10,000-entry listing, 256 MiB transfers)', run: benchFileShare },
  { name: 'listing', title: 'file share JSON listing (one folder, 8 clients) vs a static file server', run: benchListing },
  { name: 'terminal', title: 'terminal gateway', run: benchTerminal },
  { name: 'tracing', title: 'tracing overhead: box repository with tracing off / 100% / 10% sampled (real collector)', run: benchTracing },
  { name: 'auth', title: 'auth: verified requests/s on one route (session JWT vs provider Bearer vs provider DPoP)', run: benchAuth },
  { name: 'memory', title: 'memory of the one-process product (`make run`): idle, per load peak RSS, heap across rounds, RSS 60 s after', run: benchMemory },
  { name: 'operator', title: 'operator (1,000 custom resources)', run: benchOperator },
  { name: 'cluster', title: 'real node: apply → Ready per kind, terminal session start (pod vs local backend)', run: benchCluster },
];

function print(title: string, rows: BenchRow[]): void {
  console.log(`\n## ${title}`);
  console.log(`${'measure'.padEnd(62)} ${'value'.padStart(14)} ${'baseline'.padStart(14)}  ${'ratio'.padStart(5)}  goal`);
  for (const row of rows) {
    const value = `${row.value.toFixed(1)} ${row.unit}`;
    const baseline = row.baseline === undefined ? '' : `${row.baseline.toFixed(1)} ${row.unit}`;
    const ratio = row.ratio === undefined ? '' : row.ratio.toFixed(2);
    const goal = row.goal === undefined ? '' : `${row.goal}  ${row.pass ? 'PASS' : 'FAIL'}`;
    console.log(`${row.name.padEnd(62)} ${value.padStart(14)} ${baseline.padStart(14)}  ${ratio.padStart(5)}  ${goal}`);
  }
}

const only = process.env.ONLY?.split(',').filter(Boolean);
const workDir = await mkdtemp(join(tmpdir(), 'boxyard-bench-'));
await chmod(workDir, 0o755);
const secret = () => randomBytes(18).toString('base64url');
const [minio, postgres] = await startTogether([
  startMinio({ dir: join(workDir, 'minio'), accessKey: `bench${randomBytes(4).toString('hex')}`, secretKey: secret() }),
  startPostgres({ dir: join(workDir, 'pg'), password: secret(), fast: true }),
] as const);
try {
  console.log(`bench: MinIO ${minio.version}, PostgreSQL ${postgres.version}, Node ${process.version}`);
  const env: BenchEnv = { minio, postgresAdminUrl: postgres.adminUrl, workDir };
  for (const section of sections) {
    if (only && !only.includes(section.name)) continue;
    print(section.title, await section.run(env));
  }
} finally {
  await Promise.allSettled([minio.stop(), postgres.stop()]);
  await rm(workDir, { recursive: true, force: true });
}
