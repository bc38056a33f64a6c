// A real MinIO server (built from Go modules by test/tools/build-tools.sh) on loopback.
import { spawn, execFileSync } from 'node:child_process';
import { mkdir } from 'node:fs/promises';
import { freePort, waitForHttp } from './ports.ts';
import { tool } from './tools.ts';
import { ownProcess } from './owned-process.ts';

export interface RunningMinio {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  version: string;
  binary: string;
  /** The server's process id (a fault test kills it). */
  pid: number;
  /** Settles when the server process exits, for whatever reason. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

/**
 * `host`: the address to listen on (default loopback; the real node's bridge address for pods). `port`: a fixed
 * one (a server started again after a fault, so its clients find it where it was); a free one otherwise.
 */
export async function startMinio(options: { dir: string; accessKey: string; secretKey: string; host?: string; port?: number }): Promise<RunningMinio> {
  const host = options.host ?? '127.0.0.1';
  const binary = tool('MINIO');
  const port = options.port ?? (await freePort());
  const consolePort = await freePort();
  await mkdir(options.dir, { recursive: true });
  const child = spawn(binary, ['server', options.dir, '--address', `${host}:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '/tmp',
      MINIO_ROOT_USER: options.accessKey,
      MINIO_ROOT_PASSWORD: options.secretKey,
      MINIO_BROWSER: 'off',
      MINIO_UPDATE: 'off',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  // Never outlive the process that started it (a crashed test run, a failed start).
  const owned = ownProcess(child, 5000);
  const endpoint = `http://${host}:${port}`;
  try {
    await waitForHttp(`${endpoint}/minio/health/live`, 30_000);
  } catch (error) {
    child.kill('SIGKILL');
    await owned.stop();
    throw new Error(`MinIO did not start: ${String(error)}\n${stderr}`, { cause: error });
  }
  const version = execFileSync(binary, ['--version'], { encoding: 'utf8' }).split('\n')[0] ?? '?';
  return {
    endpoint,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    version,
    binary,
    pid: child.pid!,
    exited: owned.exited,
    stop: async () => {
      await owned.stop();
    },
  };
}
