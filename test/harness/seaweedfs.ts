// A real SeaweedFS (built from Go modules by test/tools/build-tools.sh) on loopback: the second S3 server the
// storage suites run against beside MinIO. One `weed server` process holds its master, volume server, filer and S3
// gateway; every port is chosen free (none of SeaweedFS' fixed defaults), so parallel runs never collide.
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, waitForHttp } from './ports.ts';
import { tool } from './tools.ts';
import { ownProcess } from './owned-process.ts';

export interface RunningSeaweedfs {
  endpoint: string;
  accessKey: string;
  secretKey: string;
  version: string;
  binary: string;
  /** Its filer's HTTP API (what a test reads to see what the S3 gateway keeps, e.g. unfinished uploads). */
  filerUrl: string;
  /** The server's process id (a fault test kills it). */
  pid: number;
  /** Settles when the server process exits, for whatever reason. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

interface MasterStatus {
  Topology?: { DataCenters?: { Racks?: { DataNodes?: unknown[] | null }[] }[] | null };
}

/** Whether the master knows a volume server (SeaweedFS can store bytes). */
async function hasVolumeServer(masterUrl: string): Promise<boolean> {
  const status = await fetch(`${masterUrl}/dir/status`).then(
    (r) => r.json() as Promise<MasterStatus>,
    (): MasterStatus => ({}),
  );
  return (status.Topology?.DataCenters ?? []).some((dc) => (dc.Racks ?? []).some((rack) => (rack.DataNodes ?? []).length > 0));
}

async function volumeServerRegistered(masterUrl: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await hasVolumeServer(masterUrl))) {
    if (Date.now() > deadline) throw new Error(`no volume server registered with the master within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The flags of each port `weed server` opens; grpc ones default to http + 10000, which another run may hold. */
const portFlags = ['master.port', 'master.port.grpc', 'volume.port', 'volume.port.grpc', 'filer.port', 'filer.port.grpc', 's3.port.grpc'] as const;

/**
 * `port`: the S3 port (fixed when a server is started again after a fault, so its clients find it where it was);
 * the other ports are saved beside the data so a restart reuses them too (the volume server registers by address).
 */
export async function startSeaweedfs(options: { dir: string; accessKey: string; secretKey: string; port?: number }): Promise<RunningSeaweedfs> {
  const binary = tool('SEAWEEDFS');
  const port = options.port ?? (await freePort());
  await mkdir(join(options.dir, 'data'), { recursive: true });
  const portsFile = join(options.dir, 'ports.json');
  const ports: Record<string, number> = await readFile(portsFile, 'utf8').then(
    (text) => JSON.parse(text) as Record<string, number>,
    async () => {
      const chosen: Record<string, number> = {};
      for (const flag of portFlags) chosen[flag] = await freePort();
      await writeFile(portsFile, JSON.stringify(chosen));
      return chosen;
    },
  );
  // One identity with every action: the same root-like credentials the services get from MinIO.
  const config = join(options.dir, 's3.json');
  await writeFile(
    config,
    JSON.stringify({
      identities: [
        {
          name: 'boxyard',
          credentials: [{ accessKey: options.accessKey, secretKey: options.secretKey }],
          actions: ['Admin', 'Read', 'List', 'Tagging', 'Write'],
        },
      ],
    }),
  );
  const args = [
    'server',
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-dir=${join(options.dir, 'data')}`,
    '-filer',
    '-s3',
    `-s3.port=${port}`,
    `-s3.config=${config}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    // Its unix sockets beside the data, not in /tmp (the gRPC ones have fixed /tmp names: removed in stop()).
    `-filer.localSocket=${join(options.dir, 'filer.sock')}`,
    `-s3.localSocket=${join(options.dir, 's3.sock')}`,
    ...portFlags.map((flag) => `-${flag}=${ports[flag]}`),
    // Small volumes, and many: every test bucket is a collection that grows 7 volumes at once. `-volume.max=0`
    // (as many as free disk / 64 MB) allowed ~650 volumes with 41 GB free, so writes answered 500 from the ~96th
    // bucket on (a full run makes more); volumes are not preallocated, so a high count costs no disk.
    '-master.volumeSizeLimitMB=64',
    '-volume.max=5000',
    '-master.telemetry=false',
    '-volume.preStopSeconds=0',
  ];
  const child = spawn(binary, args, {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp' },
    cwd: options.dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-20_000)));
  // Never outlive the process that started it (a crashed test run, a failed start).
  const owned = ownProcess(child, 5000);
  const endpoint = `http://127.0.0.1:${port}`;
  try {
    // The gateway answers /healthz once it is up; a bucket can be made once the filer and a volume server are.
    await waitForHttp(`${endpoint}/healthz`, 60_000);
    await waitForHttp(`http://127.0.0.1:${ports['master.port']}/cluster/healthz`, 60_000);
    // Started again on its data, the volume server takes ~18 s to register with the master; until then the
    // gateway answers reads but writes hang and fail (500 InternalError). Started means writable here.
    await volumeServerRegistered(`http://127.0.0.1:${ports['master.port']}`, 60_000);
  } catch (error) {
    child.kill('SIGKILL');
    await owned.stop();
    throw new Error(`SeaweedFS did not start: ${String(error)}\n${stderr}`, { cause: error });
  }
  // `version 30GB 4.53  linux amd64`: the release, then its module version (the binary's cache key).
  const printed = execFileSync(binary, ['version'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  const version = `${/\b(\d+\.\d+)\b/.exec(printed)?.[1] ?? '?'} (${binary.slice(binary.lastIndexOf('weed-') + 5)})`;
  return {
    endpoint,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    version,
    binary,
    filerUrl: `http://127.0.0.1:${ports['filer.port']}`,
    pid: child.pid!,
    exited: owned.exited,
    stop: async () => {
      await owned.stop();
      const grpc = { master: 'master.port.grpc', volume: 'volume.port.grpc', filer: 'filer.port.grpc', s3: 's3.port.grpc' } as const;
      await Promise.all(Object.entries(grpc).map(([name, flag]) => rm(`/tmp/seaweedfs-${name}-grpc-${ports[flag]}.sock`, { force: true })));
    },
  };
}
