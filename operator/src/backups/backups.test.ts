// Backup and ScheduledBackup on the run's real kube-apiserver, with the operator running as a process and the
// real MinIO for the destination. There is no kubelet here: where a node would run the Job's pod, the test
// plays the kubelet and the Job controller (it creates the pod with the termination message `boxyard backup
// --result-file` writes, and marks the Job finished); the real node suite runs the real Job.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { stringify } from 'yaml';
import { createTestBucket, createTestDatabase, type TestBucket } from '@boxyard/test/harness/fixtures.ts';
import type { ServiceResource } from '../crds/types.ts';
import type { KubeClient } from '@boxyard/kit/kube/client.ts';
import { resources } from '@boxyard/kit/kube/resources.ts';
import type { Condition, KubeObject } from '@boxyard/kit/kube/types.ts';
import { adminClient, kubectl, repoRoot, startOperatorProcess, waitFor, type OperatorProcess } from '../../test/support.ts';
import type { Backup, ScheduledBackup } from './types.ts';
import { ignoreError } from '@boxyard/kit';

const kubeconfig = inject('kubeconfig');
const NS = `backups-${randomBytes(3).toString('hex')}`;
let dir: string;
let admin: KubeClient;
let operator: OperatorProcess;
let bucket: TestBucket;

const apply = (manifest: unknown) => kubectl(kubeconfig, ['apply', '-n', NS, '-f', '-'], stringify(manifest));
const condition = (o: { status?: { conditions?: Condition[] } } | undefined, type: string) => o?.status?.conditions?.find((c) => c.type === type);
const getBackup = (name: string) => admin.get<Backup>(resources.backup, NS, name);
type JobObject = KubeObject & {
  spec: {
    template: {
      spec: {
        containers: { args: string[]; image: string; env: { name: string; value?: string; valueFrom?: unknown }[] }[];
        volumes: { name: string; configMap?: { name: string } }[];
      };
    };
  };
};

async function eventsFor(name: string): Promise<{ reason: string; type: string; message: string }[]> {
  const list = await admin.list<KubeObject & { involvedObject: { name: string }; reason: string; type: string; message: string }>(resources.event, NS);
  return list.items.filter((e) => e.involvedObject.name === name);
}

const destination = () => ({
  s3: { endpoint: bucket.endpoint, bucket: bucket.bucket, prefix: 'cluster-backups', credentialsSecretRef: { name: 'backup-s3' } },
});
const backupManifest = (name: string, source: string, kind = 'FileShare') => ({
  apiVersion: 'boxyard.io/v1alpha1',
  kind: 'Backup',
  metadata: { name },
  spec: { source: { kind, name: source }, destination: destination() },
});

/** What the kubelet and the Job controller would do when the backup pod ends. */
async function finishJob(job: string, result: Record<string, unknown>, succeeded: boolean): Promise<void> {
  const pod = await admin.create<KubeObject>({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `${job}-x1`, namespace: NS, labels: { 'batch.kubernetes.io/job-name': job } },
    spec: { containers: [{ name: 'backup', image: 'stand-in' }] },
  } as KubeObject);
  const now = new Date().toISOString();
  await admin.mergePatch(
    resources.pod,
    NS,
    pod.metadata.name,
    {
      status: {
        phase: succeeded ? 'Succeeded' : 'Failed',
        containerStatuses: [
          {
            name: 'backup',
            image: 'stand-in',
            imageID: '',
            ready: false,
            restartCount: 0,
            state: { terminated: { exitCode: succeeded ? 0 : 1, message: JSON.stringify(result), startedAt: now, finishedAt: now } },
          },
        ],
      },
    },
    'status',
  );
  const conditions = succeeded
    ? [
        { type: 'SuccessCriteriaMet', status: 'True', lastProbeTime: now, lastTransitionTime: now },
        { type: 'Complete', status: 'True', lastProbeTime: now, lastTransitionTime: now },
      ]
    : [
        { type: 'FailureTarget', status: 'True', reason: 'BackoffLimitExceeded', lastProbeTime: now, lastTransitionTime: now },
        {
          type: 'Failed',
          status: 'True',
          reason: 'BackoffLimitExceeded',
          message: 'Job has reached the specified backoff limit',
          lastProbeTime: now,
          lastTransitionTime: now,
        },
      ];
  await admin.mergePatch(
    resources.job,
    NS,
    job,
    {
      status: {
        startTime: now,
        ...(succeeded ? { completionTime: now, succeeded: 1 } : { failed: 1 }),
        conditions,
        ready: 0,
        terminating: 0,
        uncountedTerminatedPods: {},
      },
    },
    'status',
  );
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'operator-backups-'));
  admin = await adminClient(kubeconfig);
  bucket = await createTestBucket('opbk');
  await kubectl(kubeconfig, ['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'crds')]);
  await kubectl(kubeconfig, ['wait', '--for=condition=Established', '--timeout=60s', 'crd/backups.boxyard.io', 'crd/scheduledbackups.boxyard.io']);
  await kubectl(kubeconfig, ['create', 'namespace', NS]);
  await kubectl(kubeconfig, [
    'create',
    'secret',
    'generic',
    'backup-s3',
    '-n',
    NS,
    `--from-literal=accessKey=${bucket.accessKey}`,
    `--from-literal=secretKey=${bucket.secretKey}`,
  ]);
  // For the resources bootstrapped from a backup: the real PostgreSQL and MinIO, which the operator checks first.
  await kubectl(kubeconfig, ['create', 'secret', 'generic', 'db', '-n', NS, `--from-literal=url=${await createTestDatabase('opbk')}`]);
  await kubectl(kubeconfig, [
    'create',
    'secret',
    'generic',
    's3',
    '-n',
    NS,
    `--from-literal=accessKey=${bucket.accessKey}`,
    `--from-literal=secretKey=${bucket.secretKey}`,
  ]);
  // The source: paused, so the operator leaves it alone (no database here); a Backup only needs it to exist.
  await apply({
    apiVersion: 'boxyard.io/v1alpha1',
    kind: 'FileShare',
    metadata: { name: 'files', annotations: { 'boxyard.io/paused': 'true' } },
    spec: {
      image: 'ghcr.io/boxyard/boxyard:0.1.0',
      database: { secretRef: { name: 'db' } },
      storage: { endpoint: bucket.endpoint, bucket: 'files-data', credentialsSecretRef: { name: 's3' } },
    },
  });
  operator = await startOperatorProcess({ kubeconfig, logFile: join(dir, 'operator.log'), args: ['--namespaces', NS, '--resync-period', '30'] });
}, 120_000);

afterAll(async () => {
  await operator?.stop();
  await kubectl(kubeconfig, ['delete', 'namespace', NS, '--wait=false']).catch(ignoreError('teardown: the namespace may be gone'));
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Backup', () => {
  it("runs a Job from the source's image with its config, Secrets and the destination's keys, and reports Running", async () => {
    await apply(backupManifest('first', 'files'));
    const job = await waitFor('the backup Job', () => admin.get<JobObject>(resources.job, NS, 'first-backup'));
    const pod = job.spec.template.spec;
    expect(pod.containers[0]!.image).toBe('ghcr.io/boxyard/boxyard:0.1.0');
    expect(pod.containers[0]!.args).toEqual([
      'backup',
      `s3://${bucket.bucket}/cluster-backups/${NS}/first`,
      '--service',
      'file-share',
      '--config',
      '/etc/boxyard/config.yaml',
      '--result-file',
      '/dev/termination-log',
    ]);
    expect(pod.containers[0]!.env.find((e) => e.name === 'AWS_SECRET_ACCESS_KEY')?.valueFrom).toEqual({
      secretKeyRef: { name: 'backup-s3', key: 'secretKey' },
    });
    expect(pod.volumes.find((v) => v.name === 'config')?.configMap?.name).toBe('files-file-share-config');
    expect(job.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Backup', name: 'first', controller: true });
    const running = await waitFor('phase Running', async () => ((await getBackup('first'))?.status?.phase === 'Running' ? getBackup('first') : undefined));
    expect(running!.status).toMatchObject({ jobName: 'first-backup', location: `s3://${bucket.bucket}/cluster-backups/${NS}/first` });
    expect(Date.parse(running!.status!.startedAt!)).toBeGreaterThan(0);
    expect(condition(running, 'Reconciling')).toMatchObject({ status: 'True', reason: 'JobStarted', observedGeneration: 1 });
  }, 60_000);

  it('records the result of a finished Job: Completed with size, object count, version and location, and an Event', async () => {
    await finishJob(
      'first-backup',
      { ok: true, location: `s3://${bucket.bucket}/cluster-backups/${NS}/first`, bytes: 123456, objects: 7, boxyard_version: '0.1.0' },
      true,
    );
    const done = await waitFor('phase Completed', async () => ((await getBackup('first'))?.status?.phase === 'Completed' ? getBackup('first') : undefined));
    expect(done!.status).toMatchObject({ size: 123456, objectCount: 7, boxyardVersion: '0.1.0' });
    expect(Date.parse(done!.status!.completedAt!)).toBeGreaterThan(0);
    expect(condition(done, 'Ready')).toMatchObject({ status: 'True', reason: 'Completed', observedGeneration: 1 });
    await waitFor('the Completed Event', async () => (await eventsFor('first')).some((e) => e.reason === 'Completed' && e.type === 'Normal'));
  }, 60_000);

  it("records a failed Job's error (a bucket the keys cannot write) as Failed with the reason, an Event, and no retry", async () => {
    await apply(backupManifest('denied', 'files'));
    await waitFor('the Job', () => admin.get(resources.job, NS, 'denied-backup'));
    await finishJob(
      'denied-backup',
      { ok: false, error: `s3://${bucket.bucket}/cluster-backups/${NS}/denied: the credentials cannot write there: Access Denied.` },
      false,
    );
    const failed = await waitFor('phase Failed', async () => ((await getBackup('denied'))?.status?.phase === 'Failed' ? getBackup('denied') : undefined));
    expect(failed!.status!.error).toContain('the credentials cannot write there');
    expect(condition(failed, 'Stalled')).toMatchObject({ status: 'True', reason: 'BackupFailed' });
    await waitFor('the Warning Event', async () => (await eventsFor('denied')).some((e) => e.reason === 'BackupFailed' && e.type === 'Warning'));
    expect((await admin.list(resources.job, NS)).items.filter((j) => j.metadata.name.startsWith('denied'))).toHaveLength(1);
  }, 60_000);

  it('refuses a source that does not exist: Failed with SourceNotFound and an Event, no Job', async () => {
    await apply(backupManifest('orphan', 'nothing-here', 'BoxRepository'));
    const failed = await waitFor('phase Failed', async () => ((await getBackup('orphan'))?.status?.phase === 'Failed' ? getBackup('orphan') : undefined));
    expect(condition(failed, 'Stalled')).toMatchObject({ status: 'True', reason: 'SourceNotFound' });
    expect(failed!.status!.error).toContain('BoxRepository nothing-here does not exist');
    await waitFor('the Warning Event', async () => (await eventsFor('orphan')).some((e) => e.reason === 'SourceNotFound' && e.type === 'Warning'));
    expect(await admin.get(resources.job, NS, 'orphan-backup')).toBeUndefined();
  }, 60_000);

  it('refuses a source that is being deleted: Failed with SourceDeleting, no Job', async () => {
    // Held in deletion by a finalizer of the test's own (paused: the operator's finalizer work does not run).
    await apply({
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'FileShare',
      metadata: { name: 'leaving', finalizers: ['example.com/hold'], annotations: { 'boxyard.io/paused': 'true' } },
      spec: { database: { secretRef: { name: 'db' } }, storage: { endpoint: bucket.endpoint, bucket: 'leaving-data', credentialsSecretRef: { name: 's3' } } },
    });
    await kubectl(kubeconfig, ['delete', 'fileshare', 'leaving', '-n', NS, '--wait=false']);
    await waitFor(
      'the deletionTimestamp to show in the operator',
      async () => (await admin.get<ServiceResource>(resources.fileShare, NS, 'leaving'))?.metadata.deletionTimestamp,
    );
    await new Promise((r) => setTimeout(r, 1000)); // the operator's cache follows the watch
    await apply(backupManifest('too-late', 'leaving'));
    const failed = await waitFor('phase Failed', async () => ((await getBackup('too-late'))?.status?.phase === 'Failed' ? getBackup('too-late') : undefined));
    expect(condition(failed, 'Stalled')).toMatchObject({ status: 'True', reason: 'SourceDeleting' });
    expect(await admin.get(resources.job, NS, 'too-late-backup')).toBeUndefined();
    await admin.mergePatch(resources.fileShare, NS, 'leaving', { metadata: { finalizers: null } });
  }, 60_000);

  it("is immutable: a Backup's spec cannot change (nothing it wrote is overwritten)", async () => {
    const refused = await kubectl(kubeconfig, ['patch', 'backup', 'first', '-n', NS, '--type=merge', '-p', '{"spec":{"source":{"name":"other"}}}']).then(
      () => 'accepted',
      (error: Error) => error.message,
    );
    expect(refused).toContain('its spec cannot change');
    // A ScheduledBackup's name leaves room for the run's time in its Backups' names.
    const long = {
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'ScheduledBackup',
      metadata: { name: 'x'.repeat(40) },
      spec: { schedule: '@daily', source: { kind: 'FileShare', name: 'files' }, destination: destination() },
    };
    expect(
      await apply(long).then(
        () => 'accepted',
        (error: Error) => error.message,
      ),
    ).toContain('metadata.name must be at most 39 characters');
  });
});

describe('ScheduledBackup', () => {
  it('refuses a schedule that does not parse: Stalled with InvalidSchedule and an Event, no Backup', async () => {
    await apply({
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'ScheduledBackup',
      metadata: { name: 'bad' },
      spec: { schedule: '61 * * * *', source: { kind: 'FileShare', name: 'files' }, destination: destination() },
    });
    const stalled = await waitFor('Stalled', async () => {
      const s = await admin.get<ScheduledBackup>(resources.scheduledBackup, NS, 'bad');
      return condition(s, 'Stalled')?.status === 'True' ? s : undefined;
    });
    expect(condition(stalled, 'Stalled')).toMatchObject({ reason: 'InvalidSchedule', observedGeneration: 1 });
    expect(condition(stalled, 'Stalled')!.message).toContain('minute');
    await waitFor('the Warning Event', async () => (await eventsFor('bad')).some((e) => e.reason === 'InvalidSchedule'));
    expect((await admin.list<Backup>(resources.backup, NS)).items.filter((b) => b.metadata.labels?.['boxyard.io/scheduled-backup'] === 'bad')).toEqual([]);
  }, 60_000);

  it('creates a Backup per due run and prunes finished ones beyond keepLast, with their files in S3', async () => {
    await apply({
      apiVersion: 'boxyard.io/v1alpha1',
      kind: 'ScheduledBackup',
      metadata: { name: 'hourly' },
      spec: { schedule: '0 * * * *', source: { kind: 'FileShare', name: 'files' }, destination: destination(), retention: { keepLast: 1 } },
    });
    const scheduled = await waitFor(
      'nextScheduleTime',
      async () => (await admin.get<ScheduledBackup>(resources.scheduledBackup, NS, 'hourly'))?.status?.nextScheduleTime,
    );
    expect(Date.parse(scheduled) % 3_600_000).toBe(0);
    // An earlier run of the schedule (made by hand here, with its label), completed with its files in S3.
    const complete = async (name: string) => {
      const job = await waitFor('its Job', () => admin.get<KubeObject>(resources.job, NS, `${name}-backup`));
      const path = `cluster-backups/${NS}/${name}`;
      await bucket.client.putObject(bucket.bucket, `${path}/manifest.json`, Buffer.from('{}')); // what the backup would have written
      await finishJob(job.metadata.name, { ok: true, location: `s3://${bucket.bucket}/${path}`, bytes: 2, objects: 0, boxyard_version: '0.1.0' }, true);
      await waitFor('Completed', async () => (await getBackup(name))?.status?.phase === 'Completed');
    };
    await apply({ ...backupManifest('hourly-earlier', 'files'), metadata: { name: 'hourly-earlier', labels: { 'boxyard.io/scheduled-backup': 'hourly' } } });
    await complete('hourly-earlier');
    await new Promise((r) => setTimeout(r, 1100)); // creation times have one-second resolution
    // A run due: the last run set back by hand, as if the operator had been away for hours; one Backup for the latest.
    await admin.mergePatch(
      resources.scheduledBackup,
      NS,
      'hourly',
      { status: { lastScheduleTime: new Date(Date.now() - 3 * 3_600_000).toISOString() } },
      'status',
    );
    const name = await waitFor(
      'the scheduled Backup',
      async () =>
        (await admin.list<Backup>(resources.backup, NS, { labelSelector: 'boxyard.io/scheduled-backup=hourly' })).items.find(
          (b) => b.metadata.name !== 'hourly-earlier',
        )?.metadata.name,
    );
    expect(name).toBe(`hourly-${new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000).toISOString().slice(0, 16).replaceAll(/[-:T]/g, '')}`);
    await complete(name);
    const runs = ['hourly-earlier', name];
    await waitFor('the older run pruned', async () => (await getBackup(runs[0]!)) === undefined);
    expect(await getBackup(runs[1]!)).toBeDefined();
    const left: string[] = [];
    for await (const item of bucket.client.listObjectsV2(bucket.bucket, `cluster-backups/${NS}/hourly-`, true)) left.push((item as { name: string }).name);
    expect(left).toEqual([`cluster-backups/${NS}/${runs[1]}/manifest.json`]);
    await waitFor('the BackupPruned Event', async () => (await eventsFor('hourly')).some((e) => e.reason === 'BackupPruned'));
  }, 90_000);
});

describe('spec.bootstrap.fromBackup', () => {
  const fileShare = (name: string, schema: string, backup: string) => ({
    apiVersion: 'boxyard.io/v1alpha1',
    kind: 'FileShare',
    metadata: { name },
    spec: {
      image: 'ghcr.io/boxyard/boxyard:0.1.0',
      database: { secretRef: { name: 'db' }, schema },
      storage: { endpoint: bucket.endpoint, bucket: `${bucket.bucket}-${name}`, credentialsSecretRef: { name: 's3' } },
      bootstrap: { fromBackup: { name: backup } },
    },
  });
  const getShare = (name: string) => admin.get<ServiceResource>(resources.fileShare, NS, name);
  const stalledWith = (name: string, reason: string) =>
    waitFor(`${name} Stalled with ${reason}`, async () => {
      const r = await getShare(name);
      return condition(r, 'Stalled')?.status === 'True' && condition(r, 'Stalled')?.reason === reason ? r : undefined;
    });

  it('restores before the service starts: the ConfigMap and a restore Job first, the Deployment only once it completed', async () => {
    await apply(fileShare('again', 'again_share', 'first'));
    const job = await waitFor('the restore Job', () => admin.get<JobObject>(resources.job, NS, 'again-file-share-restore'), 60_000);
    expect(job.spec.template.spec.containers[0]!.args.slice(0, 4)).toEqual([
      'restore',
      `s3://${bucket.bucket}/cluster-backups/${NS}/first`,
      '--service',
      'file-share',
    ]);
    expect(job.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'FileShare', name: 'again' });
    expect(await admin.get(resources.configMap, NS, 'again-file-share-config')).toBeDefined();
    const restoring = await waitFor('Restoring', async () =>
      ((r) => (condition(r, 'Reconciling')?.reason === 'Restoring' ? r : undefined))(await getShare('again')),
    );
    expect(condition(restoring, 'Ready')?.status).toBe('False');
    expect(await admin.get(resources.deployment, NS, 'again-file-share')).toBeUndefined();
    await finishJob('again-file-share-restore', { ok: true, location: `s3://${bucket.bucket}/cluster-backups/${NS}/first`, objects: 7 }, true);
    await waitFor('the Deployment', () => admin.get(resources.deployment, NS, 'again-file-share'), 30_000);
    expect((await getShare('again'))!.status!.bootstrap).toMatchObject({
      restoredFrom: 'first',
      location: `s3://${bucket.bucket}/cluster-backups/${NS}/first`,
    });
  }, 90_000);

  it('stops with TargetNotEmpty when the restore refuses a schema that holds data, and starts nothing', async () => {
    await apply(fileShare('busy', 'busy_share', 'first'));
    await waitFor('the restore Job', () => admin.get(resources.job, NS, 'busy-file-share-restore'), 60_000);
    await finishJob(
      'busy-file-share-restore',
      { ok: false, error: 'file-share: schema busy_share in db already holds data (entries: 3 rows): restore only writes into an empty installation' },
      false,
    );
    const stalled = await stalledWith('busy', 'TargetNotEmpty');
    expect(condition(stalled, 'Stalled')!.message).toContain('already holds data');
    await waitFor('the Event', async () => (await eventsFor('busy')).some((e) => e.reason === 'TargetNotEmpty' && e.type === 'Warning'));
    expect(await admin.get(resources.deployment, NS, 'busy-file-share')).toBeUndefined();
  }, 90_000);

  it('stops with BackupTooNew when the backup was made by a newer Boxyard than the image', async () => {
    await apply(fileShare('older', 'older_share', 'first'));
    await waitFor('the restore Job', () => admin.get(resources.job, NS, 'older-file-share-restore'), 60_000);
    await finishJob(
      'older-file-share-restore',
      { ok: false, error: 'the backup was made by Boxyard 99.0.0, newer than this Boxyard 0.1.0: restore it with Boxyard 99.0.0 or newer' },
      false,
    );
    expect(condition(await stalledWith('older', 'BackupTooNew'), 'Stalled')!.message).toContain('restore it with Boxyard 99.0.0 or newer');
    expect(await admin.get(resources.deployment, NS, 'older-file-share')).toBeUndefined();
  }, 90_000);

  it('stops with BackupNotFound / BackupNotCompleted for a Backup that is missing or did not complete', async () => {
    await apply(fileShare('lost', 'lost_share', 'no-such-backup'));
    await apply(fileShare('early', 'early_share', 'denied'));
    expect(condition(await stalledWith('lost', 'BackupNotFound'), 'Stalled')!.message).toContain('Backup no-such-backup does not exist');
    expect(condition(await stalledWith('early', 'BackupNotCompleted'), 'Stalled')!.message).toContain('Backup denied is Failed');
    expect(await admin.get(resources.job, NS, 'lost-file-share-restore')).toBeUndefined();
  }, 90_000);

  it('is set at creation only: it cannot be added to a running resource, nor changed or removed', async () => {
    const refusal = (patch: unknown, name: string) =>
      kubectl(kubeconfig, ['patch', 'fileshare', name, '-n', NS, '--type=merge', '-p', JSON.stringify(patch)]).then(
        () => 'accepted',
        (error: Error) => error.message,
      );
    expect(await refusal({ spec: { bootstrap: { fromBackup: { name: 'first' } } } }, 'files')).toContain('never added or removed later');
    expect(await refusal({ spec: { bootstrap: null } }, 'again')).toContain('never added or removed later');
    expect(await refusal({ spec: { bootstrap: { fromBackup: { name: 'other' } } } }, 'again')).toContain('bootstrap is immutable');
  });
});
