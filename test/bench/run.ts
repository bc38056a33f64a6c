// `make bench`: throughput and memory, always as ratios against a baseline measured in the same run on the
// same machine (wall-clock numbers alone mean little on a shared 2-core box). Starts its own real components.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMinio } from '../harness/minio.ts';
import { benchStorage, type BenchRow } from './storage.ts';

function print(section: string, rows: BenchRow[]): void {
  console.log(`\n## ${section}`);
  console.log(`${'measure'.padEnd(62)} ${'value'.padStart(12)} ${'baseline'.padStart(12)}  ratio`);
  for (const row of rows) {
    const value = `${row.value.toFixed(1)} ${row.unit}`;
    const baseline = row.baseline === undefined ? '' : `${row.baseline.toFixed(1)} ${row.unit}`;
    console.log(`${row.name.padEnd(62)} ${value.padStart(12)} ${baseline.padStart(12)}  ${row.ratio === undefined ? '' : row.ratio.toFixed(2)}`);
  }
}

const dir = await mkdtemp(join(tmpdir(), 'boxyard-bench-'));
await chmod(dir, 0o755);
const minio = await startMinio({ dir: join(dir, 'minio'), accessKey: `bench${randomBytes(4).toString('hex')}`, secretKey: randomBytes(18).toString('base64url') });
try {
  console.log(`bench: MinIO ${minio.version}, Node ${process.version}`);
  print('storage layer (256 MiB object)', await benchStorage({ minio }));
} finally {
  await minio.stop();
  await rm(dir, { recursive: true, force: true });
}
