// A PostgreSQL and a MinIO (or SeaweedFS) that a fault test owns: it kills them (SIGKILL, as a crash or the OOM killer would)
// and starts them again on the same port and data directory, so the services' configured URLs find them again.
// Never the run's shared servers (global-setup.ts): other test files use those at the same time.
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres, type RunningPostgres } from 'boxyard/src/embedded-postgres.ts';
import { startMinio, type RunningMinio } from './minio.ts';
import { startSeaweedfs, type RunningSeaweedfs } from './seaweedfs.ts';

export interface Killable {
  /** SIGKILLs the server and waits until it is gone. */
  kill(): Promise<void>;
  /** Starts it again on the same port and data directory. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

export interface KillablePostgres extends Killable {
  adminUrl: string;
}

export interface KillableMinio extends Killable {
  /** Its data directory (what an operator would look at for disk space). */
  dir: string;
  endpoint: string;
  accessKey: string;
  secretKey: string;
}

const secret = () => randomBytes(18).toString('base64url');

/** A directory under /tmp the `postgres` user can traverse (PostgreSQL runs as that user when we are root). */
async function reachableTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

export async function startKillablePostgres(): Promise<KillablePostgres> {
  const root = await reachableTempDir('boxyard-fault-pg-');
  const options = { dir: join(root, 'data'), password: secret(), fast: true, persistent: true };
  let current: RunningPostgres = await startPostgres(options);
  const port = current.port;
  return {
    adminUrl: current.adminUrl,
    kill: () => killNow(current),
    async restart() {
      // Backends of the killed postmaster hold its shared memory for a moment; PostgreSQL refuses to start until
      // they have exited, so try again for a while (as the boxyard dev supervisor does).
      const deadline = Date.now() + 30_000;
      for (;;) {
        try {
          current = await startPostgres({ ...options, port });
          return;
        } catch (error) {
          if (Date.now() > deadline) throw error;
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    },
    async stop() {
      await current.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

/** What a started MinIO or SeaweedFS gives the killable wrapper. */
interface RunningS3Server {
  pid: number;
  exited: Promise<unknown>;
  endpoint: string;
  stop(): Promise<void>;
}
type S3ServerOptions = { dir: string; accessKey: string; secretKey: string; port?: number };

/** SIGKILL, then wait until it is gone; `stop` then only forgets its exit hook. */
async function killNow(server: { pid: number; exited: Promise<unknown>; stop(): Promise<void> }): Promise<void> {
  process.kill(server.pid, 'SIGKILL');
  await server.exited;
  await server.stop();
}

/** An S3 server started by `start`, killed and started again on the same port and data directory. */
async function startKillableS3<R extends RunningS3Server>(name: string, start: (options: S3ServerOptions) => Promise<R>) {
  const root = await reachableTempDir(`boxyard-fault-${name}-`);
  const options = { dir: root, accessKey: `fault${randomBytes(4).toString('hex')}`, secretKey: secret() };
  let current = await start(options);
  const port = Number(new URL(current.endpoint).port);
  return {
    dir: root,
    endpoint: current.endpoint,
    accessKey: options.accessKey,
    secretKey: options.secretKey,
    current: () => current,
    kill: () => killNow(current),
    async restart() {
      current = await start({ ...options, port }); // SeaweedFS keeps its other ports beside the data
    },
    async stop() {
      await current.stop();
      await rm(root, { recursive: true, force: true });
    },
  };
}

export const startKillableMinio = (): Promise<KillableMinio> => startKillableS3<RunningMinio>('minio', startMinio);

export interface KillableSeaweedfs extends KillableMinio {
  /** Keys of the multipart uploads SeaweedFS keeps in a bucket (its filer's `.uploads` folder, parts included). */
  unfinishedUploads(bucket: string): Promise<string[]>;
}

export async function startKillableSeaweedfs(): Promise<KillableSeaweedfs> {
  const server = await startKillableS3<RunningSeaweedfs>('seaweedfs', startSeaweedfs);
  return {
    ...server,
    async unfinishedUploads(bucket) {
      const response = await fetch(`${server.current().filerUrl}/buckets/${bucket}/.uploads/?limit=1000`, { headers: { accept: 'application/json' } });
      if (response.status === 404) return [];
      const listing = (await response.json()) as { Entries: { FullPath: string }[] | null };
      return (listing.Entries ?? []).map((entry) => entry.FullPath);
    },
  };
}
