// A real OpenTelemetry Collector (core's OTLP receiver + contrib's file exporter, built by test/tools/build-tools.sh)
// on loopback: OTLP/HTTP and OTLP/gRPC in, and the spans it received read back from its file exporter.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort, waitForHttp } from './ports.ts';
import { ownProcess } from './owned-process.ts';
import { tool } from './tools.ts';

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** 1 internal, 2 server, 3 client, 4 producer, 5 consumer */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** service.name of the process that sent it. */
  service: string;
  /** The sending process's resource attributes (k8s.pod.name...). */
  resource: Record<string, string | number | boolean>;
  status: { code?: number; message?: string };
}

export interface RunningCollector {
  /** OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT). */
  httpEndpoint: string;
  /** Every span received so far (the file exporter flushes every 100 ms). */
  spans(): ReceivedSpan[];
  stop(): Promise<void>;
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
const valueOf = (v: AnyValue) => v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue ?? '';
const attributesOf = (list: { key: string; value: AnyValue }[] = []) => Object.fromEntries(list.map((a) => [a.key, valueOf(a.value)]));

/** `host`: the address to listen on (default loopback; a real node's pods reach the host on its bridge address). */
export async function startCollector(options: { dir: string; host?: string }): Promise<RunningCollector> {
  const host = options.host ?? '127.0.0.1';
  const binary = tool('OTELCOL');
  await mkdir(options.dir, { recursive: true });
  const [httpPort, grpcPort] = [await freePort(), await freePort()];
  const output = join(options.dir, 'traces.jsonl');
  const config = {
    receivers: { otlp: { protocols: { http: { endpoint: `${host}:${httpPort}` }, grpc: { endpoint: `${host}:${grpcPort}` } } } },
    exporters: { file: { path: output, flush_interval: '100ms' } },
    service: {
      pipelines: { traces: { receivers: ['otlp'], exporters: ['file'] } },
      // No self-telemetry server (it would take :8888, shared by parallel runs).
      telemetry: { metrics: { level: 'none' }, logs: { level: 'warn' } },
    },
  };
  const configFile = join(options.dir, 'otelcol.yaml');
  await writeFile(configFile, stringify(config));
  const child = spawn(binary, ['--config', `file:${configFile}`], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-8000)));
  const owned = ownProcess(child);
  const { exited } = owned;
  const httpEndpoint = `http://${host}:${httpPort}`;
  try {
    // The OTLP/HTTP receiver answers 405 to a GET on its traces path once it listens.
    await Promise.race([
      waitForHttp(`${httpEndpoint}/v1/traces`, 30_000),
      exited.then(() => {
        throw new Error(`the collector exited (${child.exitCode})`);
      }),
    ]);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`the collector did not start: ${(error as Error).message}\n${stderr}`, { cause: error });
  }
  return {
    httpEndpoint,
    spans() {
      if (!existsSync(output)) return [];
      const spans: ReceivedSpan[] = [];
      for (const line of readFileSync(output, 'utf8').split('\n')) {
        if (!line.trim()) continue;
        const request = JSON.parse(line) as {
          resourceSpans?: {
            resource?: { attributes?: { key: string; value: AnyValue }[] };
            scopeSpans?: { spans?: (Omit<ReceivedSpan, 'attributes' | 'service' | 'resource'> & { attributes?: { key: string; value: AnyValue }[] })[] }[];
          }[];
        };
        for (const resource of request.resourceSpans ?? []) {
          const resourceAttributes = attributesOf(resource.resource?.attributes);
          const service = String(resourceAttributes['service.name'] ?? '');
          for (const scope of resource.scopeSpans ?? []) {
            for (const span of scope.spans ?? [])
              spans.push({
                ...span,
                parentSpanId: span.parentSpanId ?? '',
                status: span.status ?? {},
                attributes: attributesOf(span.attributes),
                service,
                resource: resourceAttributes,
              });
          }
        }
      }
      return spans;
    },
    stop: () => owned.stop(),
  };
}
