// `make bench`: throughput and memory, always as ratios against a baseline measured in the same run on the
// same machine (wall-clock numbers alone mean little on a shared 2-core box). Starts its own real components.
// `make bench ONLY=storage` runs one section (`ONLY=scale`: every scale section, scale-…; `ONLY==scale` the
// section `scale` alone: a leading `=` asks for exactly that name). Each section's table
// also goes to docs/performance/latest.md (or $BENCH_REPORT), replacing that section's previous table and keeping
// the others (report.ts).
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startPostgres } from 'boxyard/src/embedded-postgres.ts';
import { startMinio } from '../harness/minio.ts';
import { startTogether } from '../harness/start-together.ts';
import type { BenchEnv, BenchRow } from './env.ts';
import { benchAuth } from './auth.ts';
import { benchBoxRepository } from './box-repository.ts';
import { benchCluster } from './cluster.ts';
import { benchDownloads } from './downloads.ts';
import { benchFileShare } from './file-share.ts';
import { benchListing } from './listing.ts';
import { benchResumable } from './resumable.ts';
import { benchUploads } from './uploads.ts';
import { benchPublish } from './publish.ts';
import { benchScale } from './scale.ts';
import { benchScaleCpu } from './scale-cpu.ts';
import { benchScaleOperator } from './scale-operator.ts';
import { benchScaleTerminals } from './scale-terminals.ts';
import { benchScaleShare } from './scale-share.ts';
import { benchMemory } from './memory.ts';
import { benchMetadata } from './metadata.ts';
import { benchOperator } from './operator.ts';
import { benchStorage } from './storage.ts';
import { benchTerminal } from './terminal.ts';
import { benchTerminalRecording } from './terminal-recording.ts';
import { benchTracing } from './tracing.ts';
import { benchUpgrade } from './upgrade.ts';
import { formatRow, formatSpan, mergeReport, type SectionResult } from './report.ts';
import { checkout, loadAverage, machine } from './run-facts.ts';

const sections: { name: string; title: string; run: (env: BenchEnv) => Promise<BenchRow[]> }[] = [
  { name: 'storage', title: 'storage layer (256 MiB object)', run: (env) => benchStorage({ minio: env.minio }) },
  { name: 'metadata', title: 'Vagrant metadata (box with 3 versions, 32 clients) vs a static file server', run: benchMetadata },
  { name: 'downloads', title: 'box downloads (512 MiB, 1 and 4 streams) vs a static file server / a direct S3 GET', run: benchDownloads },
  { name: 'uploads', title: 'box uploads (512 MiB) vs min(sha256, storage write) of the same run', run: benchUploads },
  { name: 'publish', title: 'publishing: `vagrant cloud publish` of 1 GiB (direct, s3) vs a direct S3 PUT of the same file', run: benchPublish },
  { name: 'box-repository', title: 'box repository (1 GiB transfers, 5 GiB upload, metadata)', run: benchBoxRepository },
  { name: 'file-share', title: 'file share (10,000-entry listing, 256 MiB transfers)', run: benchFileShare },
  { name: 'resumable', title: 'file share resumable uploads (tus, 1 GiB in 16 MiB PATCHes) vs the plain upload route', run: benchResumable },
  { name: 'listing', title: 'file share JSON listing (one folder, 8 clients) vs a static file server; HTML listing vs JSON', run: benchListing },
  { name: 'terminal', title: 'terminal gateway', run: benchTerminal },
  {
    name: 'terminal-recording',
    title: 'terminal recording on vs off (two gateways, same run; CPU of gateway and agent per flood)',
    run: benchTerminalRecording,
  },
  { name: 'tracing', title: 'tracing overhead: box repository with tracing off / 100% / 10% sampled (real collector)', run: benchTracing },
  { name: 'auth', title: 'auth: verified requests/s on one route (session JWT vs provider Bearer vs provider DPoP)', run: benchAuth },
  { name: 'memory', title: 'memory of the one-process product (`make run`): idle, per load peak RSS, heap across rounds, RSS 60 s after', run: benchMemory },
  { name: 'operator', title: 'operator (1,000 custom resources)', run: benchOperator },
  { name: 'scale', title: 'scale, box repository: two catalogue sizes (10,000 → 100,000 versions) and a box of 100 → 1,000 versions', run: benchScale },
  {
    name: 'scale-terminals',
    title: 'scale: terminal sessions at two counts (typing sessions 50 → 200 at 10 keys/s; idle attached sessions), memory per session',
    run: benchScaleTerminals,
  },
  {
    name: 'scale-operator',
    title: 'scale: the operator at 1,000 → 3,000 custom resources on kwok (memory, steady-state CPU, API writes)',
    run: benchScaleOperator,
  },
  {
    name: 'scale-cpu',
    title: 'scale: CPU-seconds per GiB relayed (terminal output flood vs a raw pty reader; s3 box download vs a direct GET client)',
    run: benchScaleCpu,
  },
  {
    name: 'scale-share',
    title: 'scale: the file share at two sizes (110,000 → 1,100,000 files, a folder of 10,000 → 100,000) and 10,000 small uploads vs a plain PUT server',
    run: benchScaleShare,
  },
  { name: 'cluster', title: 'real node: apply → Ready per kind, terminal session start (pod vs local backend)', run: benchCluster },
  { name: 'upgrade', title: 'real node: helm upgrade + rollout restart under traffic (2 replicas each): served, failed, longest stall', run: benchUpgrade },
];

function print(title: string, rows: BenchRow[]): void {
  console.log(`\n## ${title}`);
  console.log(`${'measure'.padEnd(62)} ${'value'.padStart(14)} ${'baseline'.padStart(14)}  ${'ratio'.padStart(5)}  goal`);
  for (const row of rows) {
    const { measure, value, baseline, ratio, goal, result } = formatRow(row);
    console.log(`${measure.padEnd(62)} ${value.padStart(14)} ${baseline.padStart(14)}  ${ratio.padStart(5)}  ${goal && `${goal}  ${result}`}`);
  }
}

const only = process.env.ONLY?.split(',').filter(Boolean);
/**
 * `ONLY=scale` is issue 35's whole scale bench: the section `scale` and every `scale-…` one (share, terminals, …);
 * `ONLY==scale` is the section of that exact name only.
 */
const selected = (name: string) => !only || only.some((o) => name === o || `=${name}` === o || (o === 'scale' && name.startsWith('scale-')));
const root = fileURLToPath(new URL('../../', import.meta.url));
const reportPath = resolve(root, process.env.BENCH_REPORT || 'docs/performance/latest.md');
const runStarted = new Date();

/** Merges this run's sections into the figures page, keeping the sections it did not run. */
async function writeReport(results: SectionResult[]): Promise<void> {
  const existing = await readFile(reportPath, 'utf8').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined;
    throw error;
  });
  const run = { measured: formatSpan(runStarted, new Date()), machine: machine(), sections: results.map((r) => r.name) };
  const text = mergeReport(
    existing,
    run,
    results,
    sections.map((s) => s.name),
  );
  await mkdir(dirname(reportPath), { recursive: true });
  await writeFile(`${reportPath}.tmp`, text);
  await rename(`${reportPath}.tmp`, reportPath);
  console.log(`\nbench: wrote ${run.sections.join(', ')} to ${relative(process.cwd(), reportPath)}`);
}

const workDir = await mkdtemp(join(tmpdir(), 'boxyard-bench-'));
await chmod(workDir, 0o755);
const secret = () => randomBytes(18).toString('base64url');
const [minio, postgres] = await startTogether([
  startMinio({ dir: join(workDir, 'minio'), accessKey: `bench${randomBytes(4).toString('hex')}`, secretKey: secret() }),
  startPostgres({ dir: join(workDir, 'pg'), password: secret(), fast: true }),
] as const);
const results: SectionResult[] = [];
try {
  console.log(`bench: MinIO ${minio.version}, PostgreSQL ${postgres.version}, Node ${process.version}`);
  const env: BenchEnv = { minio, postgresAdminUrl: postgres.adminUrl, workDir };
  const software = `Node ${process.version}, MinIO ${minio.version}, PostgreSQL ${postgres.version}`;
  const page = relative(root, reportPath);
  const commit = checkout(root, page.startsWith('..') ? undefined : page);
  for (const section of sections) {
    if (!selected(section.name)) continue;
    const started = new Date();
    const load = loadAverage();
    const rows = await section.run(env);
    print(section.title, rows);
    const facts = {
      measured: formatSpan(started, new Date()),
      checkout: commit,
      machine: `${machine()}; load average ${load} at its start, ${loadAverage()} at its end`,
      software,
    };
    results.push({ name: section.name, title: section.title, facts, rows });
  }
} finally {
  await Promise.allSettled([minio.stop(), postgres.stop()]);
  await rm(workDir, { recursive: true, force: true });
  // Sections that finished before one failed still measured what they say: their tables are written.
  if (results.length > 0) await writeReport(results);
}
