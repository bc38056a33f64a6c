// Load generation shared by the bench sections: keep-alive clients through undici (Node's own HTTP client, far
// cheaper per request than node:http, so the generator takes less of the 2 cores from the server it measures),
// latency percentiles, and alternating rounds so a service and its baseline see the same machine load.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Pool } from 'undici';

const run = promisify(execFile);

export interface LoadResult {
  rps: number;
  p99Ms: number;
  meanMs: number;
}

/** GET `url` from `connections` keep-alive clients for `seconds`; every answer must have `expectStatus`. */
export async function loadGet(
  url: string,
  options: { seconds: number; connections: number; headers?: Record<string, string>; expectStatus?: number },
): Promise<LoadResult> {
  const target = new URL(url);
  const pool = new Pool(target.origin, { connections: options.connections, pipelining: 1 });
  const path = `${target.pathname}${target.search}`;
  const latencies: number[] = [];
  const expect = options.expectStatus ?? 200;
  const deadline = process.hrtime.bigint() + BigInt(Math.round(options.seconds * 1e9));
  const started = process.hrtime.bigint();
  try {
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (process.hrtime.bigint() < deadline) {
          const t0 = process.hrtime.bigint();
          const response = await pool.request({ method: 'GET', path, headers: options.headers ?? {} });
          await response.body.dump({ limit: Number.MAX_SAFE_INTEGER });
          if (response.statusCode !== expect) throw new Error(`GET ${url}: ${response.statusCode}, expected ${expect}`);
          latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
        }
      }),
    );
  } finally {
    await pool.close();
  }
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  return {
    rps: latencies.length / seconds,
    p99Ms: latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * 0.99))] ?? 0,
    meanMs: latencies.reduce((a, b) => a + b, 0) / Math.max(1, latencies.length),
  };
}

export const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
export const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;

/** Runs each named measurement once per round, in alternating order, and returns the per-name results. */
export async function alternate<T>(rounds: number, runs: Record<string, () => Promise<T>>): Promise<Record<string, T[]>> {
  const names = Object.keys(runs);
  const results: Record<string, T[]> = Object.fromEntries(names.map((n) => [n, []]));
  for (let i = 0; i < rounds; i++) {
    const order = i % 2 === 0 ? names : [...names].reverse();
    for (const name of order) results[name]!.push(await runs[name]!());
  }
  return results;
}

/**
 * Aggregate MiB/s of `streams` parallel whole-body GETs of `url` (each must bring `bytes`), following redirects, by
 * curl processes: the client Vagrant itself downloads with, and one that costs the 2 cores far less than a client in
 * Node (undici topped out at ~0.7 GB/s here, so every server looked the same behind it).
 */
export async function downloadMiBs(url: string, options: { streams: number; bytes: number; headers?: Record<string, string> }): Promise<number> {
  const headers = Object.entries(options.headers ?? {}).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: options.streams }, async () => {
      const { stdout } = await run('curl', ['-sS', '--fail', '-L', '--max-redirs', '2', '-o', '/dev/null', '-w', '%{size_download}', ...headers, url]);
      if (Number(stdout) !== options.bytes) throw new Error(`GET ${url}: ${stdout} bytes, expected ${options.bytes}`);
    }),
  );
  return (options.streams * options.bytes) / (1024 * 1024) / (Number(process.hrtime.bigint() - started) / 1e9);
}

/** POSTs the file at `path` as the raw body with curl (streamed from disk, as a user uploads a box); returns the answer. */
export async function curlUpload(url: string, path: string, headers: Record<string, string>): Promise<{ status: number; text: string }> {
  const headerArgs = Object.entries({ 'content-type': 'application/octet-stream', ...headers }).flatMap(([name, value]) => ['-H', `${name}: ${value}`]);
  const { stdout } = await run('curl', ['-sS', '-X', 'POST', '-T', path, ...headerArgs, '-w', '\n%{http_code}', url], { maxBuffer: 1024 * 1024 });
  const split = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(split + 1)), text: stdout.slice(0, split) };
}

/** PUTs the file at `path` to `url` with curl (a presigned storage URL); fails unless the answer is 2xx. */
export async function curlPut(url: string, path: string): Promise<void> {
  await run('curl', ['-sS', '--fail', '-o', '/dev/null', '-T', path, url]);
}
