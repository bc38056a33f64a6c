// The real-node checks of Backup, spec.bootstrap.fromBackup and ScheduledBackup (issue 32, item 3), called from
// real-cluster.test.ts so that they run on the one node the suite starts: files written through the FileShare
// Ingress (curl) and a box published for Vagrant, a Backup of each resource run as a real Job, each resource deleted
// (the FileShare with deletionPolicy Delete) and re-created bootstrapped from its Backup, then `wget --mirror` and `vagrant box add`
// getting the same bytes and sha256s; then a ScheduledBackup every minute that keeps only keepLast Backups, in the
// cluster and in S3.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { HOSTS, NS, type BoxyardCluster } from './boxyard-cluster.ts';
import { finished } from '../harness/child-output.ts';
import { until } from './fixture.ts';

const run = promisify(execFile);
const BUCKET = 'cluster-backups';

interface Resource {
  metadata: { name: string; labels?: Record<string, string> };
  spec: Record<string, any>;
  status?: Record<string, any>;
}

async function mirror(cluster: BoxyardCluster, into: string, password: string): Promise<Record<string, string>> {
  await run('wget', [
    '--mirror',
    '--no-parent',
    '--no-host-directories',
    '-e',
    'robots=off',
    '--ca-certificate',
    cluster.caFile,
    '--user=admin',
    `--password=${password}`,
    '-P',
    into,
    `https://${HOSTS.files}/docs/`,
  ]);
  const sums: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (!entry.name.startsWith('index.html'))
        sums[relative(into, path)] = createHash('sha256')
          .update(await readFile(path))
          .digest('hex');
    }
  };
  await walk(into);
  return sums;
}

/** The public box as Vagrant sees it: the metadata's checksum, and the sha256 of the bytes its URL serves. */
async function publicBox(cluster: BoxyardCluster): Promise<{ checksum: string; sha256: string }> {
  const metadata = (await (await fetch(`https://${HOSTS.boxes}/api/v2/vagrant/acme/public-box`)).json()) as {
    versions: { providers: { url: string; checksum: string }[] }[];
  };
  const provider = metadata.versions[0]!.providers[0]!;
  const { stdout } = await run('sh', ['-c', 'curl -fsSL --cacert "$1" "$2" | sha256sum', 'sh', cluster.caFile, provider.url]);
  return { checksum: provider.checksum, sha256: stdout.split(' ')[0]! };
}

async function vagrantBoxAdd(cluster: BoxyardCluster): Promise<{ code: number | null; output: string }> {
  const home = await mkdtemp(join(cluster.dir, 'vagrant-restored-'));
  return finished(
    spawn(process.env.VAGRANT_BIN ?? '/usr/bin/vagrant', ['box', 'add', 'acme/public-box', '--cacert', cluster.caFile], {
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: home,
        VAGRANT_HOME: join(home, 'vagrant.d'),
        VAGRANT_CHECKPOINT_DISABLE: '1',
        VAGRANT_SERVER_URL: `https://${HOSTS.boxes}`,
        SSL_CERT_FILE: cluster.caFile,
        CURL_CA_BUNDLE: cluster.caFile,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
  );
}

/**
 * Backup → delete → a new resource of the same name bootstrapped from the Backup. With deletionPolicy Delete the
 * old data goes and the new resource takes the same schema and prefix; a resource whose data Delete may not remove
 * (an empty prefix in a bucket the operator did not create) is deleted with Retain and restored into `fresh`.
 */
async function backupDeleteBootstrap(
  cluster: BoxyardCluster,
  kind: string,
  name: string,
  service: string,
  fresh?: { schema: string; prefix: string },
): Promise<void> {
  const { kubectl, json } = cluster;
  if (!(await cluster.s3.bucketExists(BUCKET))) await cluster.s3.makeBucket(BUCKET);
  const resource = await json<Resource>(['get', kind.toLowerCase(), name, '-n', NS, '-o', 'json']);
  const destination = {
    s3: { endpoint: resource.spec.storage.endpoint, bucket: BUCKET, credentialsSecretRef: { name: resource.spec.storage.credentialsSecretRef.name } },
  };
  const backupName = `${name}-before-delete`;
  await kubectl(
    ['apply', '-n', NS, '-f', '-'],
    JSON.stringify({ apiVersion: 'boxyard.io/v1alpha1', kind: 'Backup', metadata: { name: backupName }, spec: { source: { kind, name }, destination } }),
  );
  const done = await until(
    `Backup ${backupName} to complete`,
    async () => {
      const backup = await json<Resource>(['get', 'backup', backupName, '-n', NS, '-o', 'json']);
      if (backup.status?.phase === 'Failed') throw new Error(`Backup failed: ${backup.status.error}`);
      return backup.status?.phase === 'Completed' ? backup : undefined;
    },
    300_000,
  );
  expect(done.status!.objectCount).toBeGreaterThan(0);
  expect(done.status!.size).toBeGreaterThan(0);
  expect(done.status!.location).toBe(`s3://${BUCKET}/boxyard-backups/${NS}/${backupName}`);

  if (!fresh) await kubectl(['patch', kind.toLowerCase(), name, '-n', NS, '--type=merge', '-p', '{"spec":{"deletionPolicy":"Delete"}}']);
  await kubectl(['delete', kind.toLowerCase(), name, '-n', NS, '--timeout=120s']);
  const spec = fresh
    ? { ...resource.spec, database: { ...resource.spec.database, schema: fresh.schema }, storage: { ...resource.spec.storage, prefix: fresh.prefix } }
    : resource.spec;
  const recreated = {
    apiVersion: 'boxyard.io/v1alpha1',
    kind,
    metadata: { name },
    spec: { ...spec, deletionPolicy: 'Retain', bootstrap: { fromBackup: { name: backupName } } },
  };
  await kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify(recreated));
  await cluster.waitReady([`${kind.toLowerCase()}/${name}`], 300);
  const restored = await json<Resource>(['get', kind.toLowerCase(), name, '-n', NS, '-o', 'json']);
  expect(restored.status!.bootstrap).toMatchObject({ restoredFrom: backupName });
  const restoreJob = await json<{ status: { succeeded?: number } }>(['get', 'job', `${name}-${service}-restore`, '-n', NS, '-o', 'json']);
  expect(restoreJob.status.succeeded).toBe(1);
}

/** Files (curl-uploaded earlier) and the public box survive Backup → delete → bootstrap: same sha256s for wget and vagrant. */
export async function backupDeleteRestore(cluster: BoxyardCluster): Promise<void> {
  // The accounts are the backup's: the admin signs in with the password they had, not the new generated Secret's.
  const password = await cluster.secretValue('files-file-share-admin', 'password');
  const before = await mirror(cluster, await mkdtemp(join(cluster.dir, 'before-')), password);
  expect(Object.keys(before).length).toBeGreaterThan(0);
  const box = await publicBox(cluster);
  expect(box.sha256).toBe(box.checksum);

  await backupDeleteBootstrap(cluster, 'FileShare', 'files', 'file-share');
  await until('the FileShare Ingress to answer', async () => ((await fetch(`https://${HOSTS.files}/health/ready`)).status === 200 ? true : undefined), 60_000);
  expect(await mirror(cluster, await mkdtemp(join(cluster.dir, 'after-')), password)).toEqual(before);

  // The example's box repository keeps its boxes at the root of a bucket made outside the operator, which
  // deletionPolicy Delete refuses to empty: deleted with Retain, it is bootstrapped into a new schema and prefix.
  await backupDeleteBootstrap(cluster, 'BoxRepository', 'boxes', 'box-repository', { schema: 'boxes_restored', prefix: 'restored' });
  await until(
    'the BoxRepository Ingress to answer',
    async () => ((await fetch(`https://${HOSTS.boxes}/health/ready`)).status === 200 ? true : undefined),
    60_000,
  );
  expect(await publicBox(cluster)).toEqual(box);
  const added = await vagrantBoxAdd(cluster);
  expect(added.code, added.output).toBe(0);
  expect(added.output).toContain("Successfully added box 'acme/public-box' (v1.0.0) for 'virtualbox'");
}

/** A ScheduledBackup every minute with keepLast 1: after two runs, one Backup is left, and one backup in S3. */
export async function scheduleKeepsRetention(cluster: BoxyardCluster): Promise<void> {
  const { kubectl, json } = cluster;
  const files = await json<Resource>(['get', 'fileshare', 'files', '-n', NS, '-o', 'json']);
  const destination = {
    s3: {
      endpoint: files.spec.storage.endpoint,
      bucket: BUCKET,
      prefix: 'scheduled',
      credentialsSecretRef: { name: files.spec.storage.credentialsSecretRef.name },
    },
  };
  await kubectl(
    ['apply', '-n', NS, '-f', '-'],
    JSON.stringify({
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'ScheduledBackup',
      metadata: { name: 'every-minute' },
      spec: { schedule: '* * * * *', source: { kind: 'FileShare', name: 'files' }, destination, retention: { keepLast: 1 } },
    }),
  );
  const list = async () =>
    (await json<{ items: Resource[] }>(['get', 'backups', '-n', NS, '-l', 'boxyard.io/scheduled-backup=every-minute', '-o', 'json'])).items;
  const seen = new Set<string>();
  await until(
    'two completed scheduled Backups, the older one pruned',
    async () => {
      const backups = await list();
      for (const b of backups) if (b.status?.phase === 'Completed') seen.add(b.metadata.name);
      const failed = backups.find((b) => b.status?.phase === 'Failed');
      if (failed) throw new Error(`scheduled Backup failed: ${failed.status!.error}`);
      return seen.size >= 2 && backups.length === 1 && backups[0]!.status?.phase === 'Completed' ? true : undefined;
    },
    300_000,
  );
  const [kept] = await list();
  const manifests: string[] = [];
  for await (const item of cluster.s3.listObjectsV2(BUCKET, `scheduled/${NS}/`, true))
    if ((item as { name: string }).name.endsWith('/manifest.json')) manifests.push((item as { name: string }).name);
  expect(manifests).toEqual([`scheduled/${NS}/${kept!.metadata.name}/manifest.json`]);
  await kubectl(['delete', 'scheduledbackup', 'every-minute', '-n', NS]);
}
