// The second service as its users reach it: `boxyard serve second-service`, then curl over HTTPS.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@boxyard/kit/net/free-port.ts';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../../boxyard/src/main.ts', import.meta.url));
const curl = async (...args: string[]) => (await run('curl', ['-sS', '--max-time', '10', ...args])).stdout;

function serve(env: Record<string, string>): ChildProcess {
  return spawn(process.execPath, [cli, 'serve', 'second-service'], {
    env: { PATH: process.env.PATH ?? '', BOXYARD_METRICS__PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

async function waitUntilListening(child: ChildProcess): Promise<void> {
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Server listening')) resolve();
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited with ${code}: ${output}`)));
  });
}

describe('second service over HTTPS', () => {
  let child: ChildProcess;
  let base: string;
  let metricsUrl: string;
  beforeAll(async () => {
    const port = await freePort();
    const metricsPort = await freePort();
    base = `https://127.0.0.1:${port}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}/metrics`;
    child = serve({ BOXYARD_SERVER__PORT: String(port), BOXYARD_METRICS__PORT: String(metricsPort) });
    await waitUntilListening(child);
  });
  afterAll(() => {
    child.kill('SIGTERM');
  });

  it('publishes an OpenAPI 3.0.3 description, version 0.3.7, its base URL as server, and no paths', async () => {
    const spec = JSON.parse(await curl('-k', `${base}/openapi.json`));
    expect(spec.openapi).toBe('3.0.3');
    expect(spec.info.version).toBe('0.3.7');
    expect(spec.servers).toEqual([{ url: base }]);
    expect(spec.paths).toEqual({});
  });

  it('refuses plain HTTP and serves a self-signed certificate for the loopback names', async () => {
    await expect(curl(`${base.replace('https', 'http')}/health`)).rejects.toThrow();
    // Without -k curl refuses the self-signed certificate, as it should.
    await expect(curl(`${base}/health`)).rejects.toThrow(/certificate/);
    const verbose = (await run('curl', ['-sSkv', `${base}/health`])).stderr;
    expect(verbose).toMatch(/subjectAltName|SSL connection using TLS/);
  });

  it('serves Swagger UI at /api-docs and /health, and /metrics on its own listener only', async () => {
    expect(await curl('-k', `${base}/api-docs/`)).toContain('swagger-ui');
    expect(JSON.parse(await curl('-k', `${base}/health`))).toEqual({ status: 'ok' });
    expect(await curl('-k', '-o', '/dev/null', '-w', '%{http_code}', `${base}/metrics`)).toBe('404');
    const metrics = await curl(metricsUrl);
    expect(metrics).toContain('http_request_duration_seconds_bucket{le="0.005",service="second-service",method="GET",route="/health"');
  });

  it('answers unknown paths 404 in problem-details form', async () => {
    const out = await curl('-k', '-w', '\n%{http_code}', `${base}/anything`);
    const [body, status] = out.split('\n');
    expect(status).toBe('404');
    expect(JSON.parse(body!)).toMatchObject({ status: 404, title: 'Not found' });
  });
});

describe('second service configuration', () => {
  it('stops at start-up with a message naming the bad key and rule', async () => {
    const child = serve({ BOXYARD_SERVER__PORT: '70000' });
    let stderr = '';
    child.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code).toBe(2);
    expect(stderr).toContain('config: server.port: Too big: expected number to be <=65535 (rule: too_big)');
  });
});

describe('tracing through the standard OTEL_* variables', () => {
  it('exports a request span with the route template when OTEL_TRACES_EXPORTER is set', async () => {
    const port = await freePort();
    const child = serve({
      BOXYARD_SERVER__PORT: String(port),
      OTEL_TRACES_EXPORTER: 'console',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'none',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    });
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    await waitUntilListening(child);
    await curl('-k', `https://127.0.0.1:${port}/openapi.json`);
    const deadline = Date.now() + 10_000;
    while (!output.includes("name: 'request'") && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGTERM');
    expect(output).toContain("'service.name': 'boxyard-second-service'");
    expect(output).toMatch(/name: 'GET \/openapi\.json',[\s\S]*'http\.route': '\/openapi\.json',\s*'http\.response\.status_code': 200/);
  });

  it('starts no exporter when no OTEL_* variable is set', async () => {
    const port = await freePort();
    const child = serve({ BOXYARD_SERVER__PORT: String(port) });
    let output = '';
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    await waitUntilListening(child);
    await curl('-k', `https://127.0.0.1:${port}/openapi.json`);
    await new Promise((r) => setTimeout(r, 500));
    child.kill('SIGTERM');
    expect(output).not.toContain('instrumentationScope');
  });
});
