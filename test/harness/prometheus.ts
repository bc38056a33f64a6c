// A real Prometheus server (Debian's `prometheus`, installed by `make test-deps`) on loopback, scraping static
// targets from a generated config every second, with its HTTP API for PromQL queries.
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, waitForHttp } from './ports.ts';
import { ownProcess } from './owned-process.ts';

export interface ScrapeTarget {
  job: string;
  /** host:port */
  address: string;
  metricsPath?: string;
  /** https: scraped without verifying the certificate (loopback, self-signed in `boxyard dev`). */
  scheme?: 'http' | 'https';
  labels?: Record<string, string>;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface RunningPrometheus {
  url: string;
  version: string;
  configFile: string;
  /** An instant PromQL query over the HTTP API; throws with Prometheus' error for a bad query. */
  query(promql: string): Promise<PromSample[]>;
  /** The scrape targets and their health, as /api/v1/targets reports them. */
  targets(): Promise<{ job: string; instance: string; health: string; lastError: string }[]>;
  stop(): Promise<void>;
}

export function prometheusBinary(): string {
  try {
    return execFileSync('sh', ['-c', 'command -v prometheus'], { encoding: 'utf8' }).trim();
  } catch {
    throw new Error('prometheus is not installed: run `make test-deps` (Debian package prometheus)');
  }
}

export async function startPrometheus(options: { dir: string; targets: ScrapeTarget[]; ruleFiles?: string[] }): Promise<RunningPrometheus> {
  const binary = prometheusBinary();
  const version = /version (\S+)/.exec(execFileSync(binary, ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
  await mkdir(join(options.dir, 'data'), { recursive: true });
  const jobs = new Map<string, ScrapeTarget[]>();
  for (const target of options.targets) jobs.set(target.job, [...(jobs.get(target.job) ?? []), target]);
  const config = {
    global: { scrape_interval: '1s', scrape_timeout: '1s', evaluation_interval: '1s' },
    ...(options.ruleFiles?.length ? { rule_files: options.ruleFiles } : {}),
    scrape_configs: [...jobs].flatMap(([job, targets]) => {
      // One scrape config per metrics path and scheme (a job may mix HTTP and HTTPS listeners).
      const kindOf = (t: ScrapeTarget) => `${t.scheme ?? 'http'} ${t.metricsPath ?? '/metrics'}`;
      return [...new Set(targets.map(kindOf))].map((kind, i) => {
        const [scheme, path] = kind.split(' ') as [string, string];
        return {
          job_name: i === 0 ? job : `${job}-${i}`,
          metrics_path: path,
          scheme,
          ...(scheme === 'https' ? { tls_config: { insecure_skip_verify: true } } : {}),
          static_configs: targets.filter((t) => kindOf(t) === kind).map((t) => ({ targets: [t.address], labels: { job, ...t.labels } })),
        };
      });
    }),
  };
  const configFile = join(options.dir, 'prometheus.yml');
  await writeFile(configFile, stringify(config));
  execFileSync(binary.replace(/prometheus$/, 'promtool'), ['check', 'config', configFile], { stdio: 'pipe' });
  const port = await freePort();
  const child = spawn(
    binary,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(options.dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1h',
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const owned = ownProcess(child);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/-/ready`, 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`prometheus did not get ready: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  const api = async <T>(path: string): Promise<T> => {
    const response = await fetch(`${url}${path}`);
    const body = (await response.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`prometheus ${path}: ${body.error ?? response.status}`);
    return body.data;
  };
  return {
    url,
    version,
    configFile,
    query: async (promql) => (await api<{ result: PromSample[] }>(`/api/v1/query?query=${encodeURIComponent(promql)}`)).result,
    targets: async () =>
      (await api<{ activeTargets: { labels: Record<string, string>; health: string; lastError: string }[] }>('/api/v1/targets')).activeTargets.map((t) => ({
        job: t.labels.job ?? '',
        instance: t.labels.instance ?? '',
        health: t.health,
        lastError: t.lastError,
      })),
    stop: () => owned.stop(),
  };
}
