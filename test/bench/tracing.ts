// `make bench` section for tracing's cost: the box repository with tracing off, on at 100% and on at 10%
// (parentbased_traceidratio), side by side in one run, exporting to a real OpenTelemetry Collector. Metadata
// requests/s and download MiB/s (256 MiB box) are measured in rounds that alternate the three processes, so
// machine noise spreads evenly; each figure is a median, and each traced one is a ratio against "off".
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { startCollector } from '../harness/otel-collector.ts';
import { generatedBox, httpDownload, httpUpload, createPublicBox, median, requestsPerSecond, startService, timed, type Service } from './box-repository.ts';
import { type BenchEnv, type BenchRow, createBenchBucket, createBenchDatabase, removeBenchBucket } from './env.ts';

const MiB = 1024 * 1024;
const region = 'us-east-1';
const ROUNDS = 3;
const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Ratio goals: at 10% sampling, tracing must cost little; at 100% it is reported against a looser goal. */
const GOALS = { metadata: { '100%': 0.7, '10%': 0.85 }, download: { '100%': 0.9, '10%': 0.9 } } as const;

export async function benchTracing(env: BenchEnv): Promise<BenchRow[]> {
  const collector = await startCollector({ dir: join(env.workDir, 'collector') });
  const { minio, bucket } = await createBenchBucket(env, 'tracing');
  const adminPassword = `Bench-${randomBytes(12).toString('base64url')}1a`;
  const config = {
    server: { host: '127.0.0.1', port: 0 },
    logging: { level: 'warn' },
    database: { url: await createBenchDatabase(env, `bench_tracing_${randomBytes(4).toString('hex')}`) },
    storage: {
      driver: 's3',
      endpoint: env.minio.endpoint,
      access_key: env.minio.accessKey,
      secret_key: env.minio.secretKey,
      bucket,
      region,
      prefix: 'box-repository',
    },
    session: { secret: randomBytes(32).toString('base64url') },
    admin: { password: adminPassword },
    rate_limiting: { enabled: false },
  };
  const traced = (ratio: string) => ({
    OTEL_EXPORTER_OTLP_ENDPOINT: collector.httpEndpoint,
    OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
    OTEL_TRACES_SAMPLER_ARG: ratio,
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
  });
  const modes = ['off', '100%', '10%'] as const;
  const services: Record<(typeof modes)[number], Service> = {
    off: await startService(config),
    '100%': await startService(config, traced('1.0')),
    '10%': await startService(config, traced('0.1')),
  };
  try {
    const base = services.off.url;
    const { token, uploadUrl } = await createPublicBox(base, adminPassword, { org: 'bench', box: 'traced', versions: ['1.0.0'] });
    const size = 256 * MiB;
    const upload = await httpUpload(uploadUrl('1.0.0'), { 'x-access-token': token }, generatedBox(size));
    if (upload.status >= 300) throw new Error(`upload: ${upload.status} ${upload.text}`);

    const metadata: Record<string, number[]> = { off: [], '100%': [], '10%': [] };
    const download: Record<string, number[]> = { off: [], '100%': [], '10%': [] };
    for (let i = 0; i < ROUNDS; i++) {
      for (const mode of modes) {
        const url = services[mode].url;
        metadata[mode]!.push(await requestsPerSecond(`${url}/bench/traced`, 3));
        let bytes = 0;
        const seconds = await timed(
          async () => void (bytes = await httpDownload(`${url}/bench/boxes/traced/versions/1.0.0/providers/virtualbox/amd64/vagrant.box`, {})),
        );
        download[mode]!.push(bytes / MiB / seconds);
      }
    }
    const spans = collector.spans().length;
    if (spans === 0) throw new Error('the traced services sent no spans to the collector');
    const rows: BenchRow[] = [];
    for (const [what, figures, unit] of [
      ['metadata requests/s (16 clients)', metadata, 'req/s'],
      ['download 256 MiB box', download, 'MiB/s'],
    ] as const) {
      const off = median(figures.off!);
      for (const mode of ['100%', '10%'] as const) {
        const value = median(figures[mode]!);
        const ratio = value / off;
        const goal = GOALS[what.startsWith('metadata') ? 'metadata' : 'download'][mode];
        rows.push({
          name: `${what}: tracing ${mode} vs off (goal ≥ ${goal}×) ${ratio >= goal ? 'PASS' : 'FAIL'}`,
          value: round(value),
          unit,
          baseline: round(off),
          ratio: round(ratio, 3),
        });
      }
    }
    rows.push({ name: 'spans the collector received during the section', value: spans, unit: 'spans' });
    return rows;
  } finally {
    await Promise.allSettled(Object.values(services).map((s) => s.stop()));
    await collector.stop();
    await removeBenchBucket(minio, bucket);
  }
}
