// `make bench ONLY=metadata`: the Vagrant metadata document of a box with 3 versions at 32 keep-alive clients,
// against a plain static file server serving the same JSON from a file, in alternating rounds (medians of 3).
// Goal (issue 13): ≥ 4,000 req/s with p99 ≤ 20 ms; the static server's figure is the machine's ceiling for
// "answer the same bytes" under the same load generator, the ratio shows how close the service comes.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedBox, httpUpload, createPublicBox, startService } from './box-repository.ts';
import { createBenchDatabase, type BenchEnv, type BenchRow } from './env.ts';
import { alternate, loadGet, median, round, type LoadResult } from './load.ts';

const staticServerScript = fileURLToPath(new URL('./static-server.ts', import.meta.url));
const seconds = 5;
const connections = 32;

/** The bench's plain static file server on `dir`, in its own process. */
export const startStaticServer = (dir: string) => startBaselineServer(staticServerScript, dir);

/** A baseline server script on `dir`, in its own process; it prints `listening <url>` when ready. */
export async function startBaselineServer(script: string, dir: string): Promise<{ url: string; pid: number; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [script, dir], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening (\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Starts a box repository (local storage) with one public box `bench/meta` of 3 versions; returns its API. */
export async function startBoxRepositoryWithBox(env: BenchEnv, extraConfig: Record<string, unknown> = {}) {
  const databaseUrl = await createBenchDatabase(env, `bench_meta_${randomBytes(4).toString('hex')}`);
  const root = join(env.workDir, `boxes-${randomBytes(4).toString('hex')}`);
  await mkdir(root, { recursive: true });
  const adminPassword = `Bench-${randomBytes(12).toString('base64url')}1a`;
  const service = await startService({
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: databaseUrl },
    storage: { driver: 'local', root },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: adminPassword },
    rate_limiting: { enabled: false },
    ...extraConfig,
  });
  const { token, api, uploadUrl } = await createPublicBox(service.url, adminPassword, { org: 'bench', box: 'meta', versions: ['1.0.0', '1.1.0', '2.0.0'] });
  for (const version of ['1.0.0', '1.1.0', '2.0.0']) {
    const uploaded = await httpUpload(uploadUrl(version), { 'x-access-token': token }, generatedBox(4096));
    if (uploaded.status >= 300) throw new Error(`upload: ${uploaded.status} ${uploaded.text}`);
  }
  return { service, token, api, root };
}

export async function benchMetadata(env: BenchEnv): Promise<BenchRow[]> {
  const { service } = await startBoxRepositoryWithBox(env);
  const staticDir = join(env.workDir, 'static-metadata');
  await mkdir(staticDir, { recursive: true });
  const metadataUrl = `${service.url}/bench/meta`;
  const first = await fetch(metadataUrl);
  const document = await first.text();
  const etag = first.headers.get('etag');
  await writeFile(join(staticDir, 'meta.json'), document);
  const baseline = await startStaticServer(staticDir);
  try {
    // Warm both (JIT, caches), then alternate.
    await loadGet(metadataUrl, { seconds: 1, connections });
    await loadGet(`${baseline.url}/meta.json`, { seconds: 1, connections });
    const runs: Record<string, () => Promise<LoadResult>> = {
      service: () => loadGet(metadataUrl, { seconds, connections }),
      static: () => loadGet(`${baseline.url}/meta.json`, { seconds, connections }),
      health: () => loadGet(`${service.url}/health`, { seconds, connections }),
    };
    if (etag) runs.revalidate = () => loadGet(metadataUrl, { seconds, connections, headers: { 'if-none-match': etag }, expectStatus: 304 });
    const results = await alternate(3, runs);
    const rps = (name: string) => median(results[name]!.map((r) => r.rps));
    const p99 = (name: string) => median(results[name]!.map((r) => r.p99Ms));
    const rows: BenchRow[] = [
      {
        name: `metadata req/s, ${connections} clients (vs static file server)`,
        value: round(rps('service')),
        unit: 'req/s',
        baseline: round(rps('static')),
        ratio: round(rps('service') / rps('static'), 3),
        goal: '≥ 4000 req/s',
        pass: rps('service') >= 4000,
      },
      {
        name: `metadata p99 latency, ${connections} clients (vs static)`,
        value: round(p99('service'), 2),
        unit: 'ms',
        baseline: round(p99('static'), 2),
        ratio: round(p99('service') / p99('static'), 3),
        goal: '≤ 20 ms',
        pass: p99('service') <= 20,
      },
    ];
    rows.push({
      name: `GET /health req/s (the service's floor without a database), ${connections} clients`,
      value: round(rps('health')),
      unit: 'req/s',
      baseline: round(rps('static')),
      ratio: round(rps('health') / rps('static'), 3),
    });
    if (etag)
      rows.push({
        name: `metadata If-None-Match → 304 req/s, ${connections} clients`,
        value: round(rps('revalidate')),
        unit: 'req/s',
        baseline: round(rps('static')),
        ratio: round(rps('revalidate') / rps('static'), 3),
        goal: '≥ 4000 req/s',
        pass: rps('revalidate') >= 4000,
      });
    else rows.push({ name: 'metadata answers with an ETag', value: 0, unit: '', goal: 'ETag present', pass: false });
    return rows;
  } finally {
    await Promise.allSettled([service.stop(), baseline.stop()]);
  }
}
