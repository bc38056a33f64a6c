// The real-node checks of Backup, spec.bootstrap.fromBackup and ScheduledBackup (issue 32, item 3), called from
// real-cluster.test.ts so that they run on the one node the suite starts: files written through the FileShare
// Ingress (curl), a Backup run as a real Job, the FileShare deleted with deletionPolicy Delete, a new one
// bootstrapped from the Backup, and `wget --mirror` getting the same bytes; then a ScheduledBackup every minute
// that keeps only keepLast Backups, in the cluster and in S3.
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { HOSTS, NS, type BoxyardCluster } from './boxyard-cluster.ts';
import { until } from './fixture.ts';

const run = promisify(execFile);
const BUCKET = 'cluster-backups';

interface Resource { metadata: { name: string; labels?: Record<string, string> }; spec: Record<string, any>; status?: Record<string, any> } // eslint-disable-line @typescript-eslint/no-explicit-any

async function mirror(cluster: BoxyardCluster, into: string, password: string): Promise<Record<string, string>> {
  await run('wget', ['--mirror', '--no-parent', '--no-host-directories', '-e', 'robots=off', '--ca-certificate', cluster.caFile, '--user=admin', `--password=${password}`, '-P', into, `https://${HOSTS.files}/docs/`]);
  const sums: Record<string, string> = {};
  const walk = async (dir: string): Promise<void> => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else if (!entry.name.startsWith('index.html')) sums[relative(into, path)] = createHash('sha256').update(await readFile(path)).digest('hex');
    }
  };
  await walk(into);
  return sums;
}

/** Backup → delete (deletionPolicy Delete) → bootstrap from the Backup → the same bytes through wget --mirror. */
export async function backupDeleteRestore(cluster: BoxyardCluster): Promise<void> {
  const { kubectl, json } = cluster;
  if (!(await cluster.s3.bucketExists(BUCKET))) await cluster.s3.makeBucket(BUCKET);
  const files = await json<Resource>(['get', 'fileshare', 'files', '-n', NS, '-o', 'json']);
  // The accounts are the backup's: the admin signs in with the password they had, not the new generated Secret's.
  const password = await cluster.secretValue('files-file-share-admin', 'password');
  const before = await mirror(cluster, await mkdtemp(join(cluster.dir, 'before-')), password);
  expect(Object.keys(before).length).toBeGreaterThan(0);
  const destination = { s3: { endpoint: files.spec.storage.endpoint, bucket: BUCKET, credentialsSecretRef: { name: files.spec.storage.credentialsSecretRef.name } } };
  await kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'boxyard.io/v1alpha1', kind: 'Backup', metadata: { name: 'files-before-delete' }, spec: { source: { kind: 'FileShare', name: 'files' }, destination } }));
  const done = await until('the Backup to complete', async () => {
    const backup = await json<Resource>(['get', 'backup', 'files-before-delete', '-n', NS, '-o', 'json']);
    if (backup.status?.phase === 'Failed') throw new Error(`Backup failed: ${backup.status.error}`);
    return backup.status?.phase === 'Completed' ? backup : undefined;
  }, 300_000);
  expect(done.status!.objectCount).toBeGreaterThan(0);
  expect(done.status!.size).toBeGreaterThan(0);

  await kubectl(['patch', 'fileshare', 'files', '-n', NS, '--type=merge', '-p', '{"spec":{"deletionPolicy":"Delete"}}']);
  await kubectl(['delete', 'fileshare', 'files', '-n', NS, '--timeout=120s']);
  const recreated = { apiVersion: 'boxyard.io/v1alpha1', kind: 'FileShare', metadata: { name: 'files' }, spec: { ...files.spec, deletionPolicy: 'Retain', bootstrap: { fromBackup: { name: 'files-before-delete' } } } };
  await kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify(recreated));
  await cluster.waitReady(['fileshare/files'], 300);
  const restored = await json<Resource>(['get', 'fileshare', 'files', '-n', NS, '-o', 'json']);
  expect(restored.status!.bootstrap).toMatchObject({ restoredFrom: 'files-before-delete' });
  await until('the FileShare Ingress to answer', async () => ((await fetch(`https://${HOSTS.files}/health/ready`)).status === 200 ? true : undefined), 60_000);
  expect(await mirror(cluster, await mkdtemp(join(cluster.dir, 'after-')), password)).toEqual(before);
}

/** A ScheduledBackup every minute with keepLast 1: after two runs, one Backup is left, and one backup in S3. */
export async function scheduleKeepsRetention(cluster: BoxyardCluster): Promise<void> {
  const { kubectl, json } = cluster;
  const files = await json<Resource>(['get', 'fileshare', 'files', '-n', NS, '-o', 'json']);
  const destination = { s3: { endpoint: files.spec.storage.endpoint, bucket: BUCKET, prefix: 'scheduled', credentialsSecretRef: { name: files.spec.storage.credentialsSecretRef.name } } };
  await kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify({ apiVersion: 'boxyard.io/v1alpha1', kind: 'ScheduledBackup', metadata: { name: 'every-minute' }, spec: { schedule: '* * * * *', source: { kind: 'FileShare', name: 'files' }, destination, retention: { keepLast: 1 } } }));
  const list = async () => (await json<{ items: Resource[] }>(['get', 'backups', '-n', NS, '-l', 'boxyard.io/scheduled-backup=every-minute', '-o', 'json'])).items;
  const seen = new Set<string>();
  await until('two completed scheduled Backups, the older one pruned', async () => {
    const backups = await list();
    for (const b of backups) if (b.status?.phase === 'Completed') seen.add(b.metadata.name);
    const failed = backups.find((b) => b.status?.phase === 'Failed');
    if (failed) throw new Error(`scheduled Backup failed: ${failed.status!.error}`);
    return seen.size >= 2 && backups.length === 1 && backups[0]!.status?.phase === 'Completed' ? true : undefined;
  }, 300_000);
  const [kept] = await list();
  const manifests: string[] = [];
  for await (const item of cluster.s3.listObjectsV2(BUCKET, `scheduled/${NS}/`, true)) if ((item as { name: string }).name.endsWith('/manifest.json')) manifests.push((item as { name: string }).name);
  expect(manifests).toEqual([`scheduled/${NS}/${kept!.metadata.name}/manifest.json`]);
  await kubectl(['delete', 'scheduledbackup', 'every-minute', '-n', NS]);
}
