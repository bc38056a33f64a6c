// The CRDs of the backup kinds: Backup (one backup of one service resource, run once as a Job) and ScheduledBackup
// (Backups on a cron schedule, pruned by count and age). Rendered with the service kinds' CRDs by
// `node operator/src/crds/generate.ts` (render.ts) into crds/ and the chart.
import { boolean, integer, object, string, type JsonSchema as Schema } from '@boxyard/kit/service/cluster-schema.ts';
import { kinds as registryKinds } from '@boxyard/registry/kinds.ts';
import { conditionsSchema } from '../crds/definitions.ts';
import { GROUP, VERSION } from '@boxyard/kit/kube/resources.ts';

const NAME: Schema = string('Name of an object in the same namespace.', { minLength: 1, maxLength: 253 });

export const SOURCE: Schema = object(
  'The service resource to back up, in the same namespace.',
  { kind: string('Its kind.', { enum: registryKinds.map((k) => k.kind) }), name: NAME },
  { required: ['kind', 'name'] },
);

export const DESTINATION: Schema = object(
  'Where backups go: an S3 bucket (MinIO or any S3). Each Backup writes under <prefix>/<namespace>/<backup name>/, which must be empty: a backup never overwrites another.',
  {
    s3: object(
      'S3-compatible object storage.',
      {
        endpoint: string('http(s)://host[:port] of the S3 API.', { pattern: '^https?://[^/\\s]+/?$', maxLength: 2048 }),
        bucket: string('Bucket name (it must exist).', { pattern: '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$', maxLength: 63 }),
        region: string('Bucket region.', { default: 'us-east-1', maxLength: 64 }),
        prefix: string('Key prefix inside the bucket.', {
          default: 'boxyard-backups',
          pattern: "^[A-Za-z0-9!_.*'()-]+(/[A-Za-z0-9!_.*'()-]+)*$",
          maxLength: 512,
        }),
        credentialsSecretRef: object(
          'Secret with an access key pair that may list, read, write and delete under the prefix.',
          {
            name: NAME,
            accessKeyKey: string('Key holding the access key id.', { default: 'accessKey', minLength: 1 }),
            secretKeyKey: string('Key holding the secret access key.', { default: 'secretKey', minLength: 1 }),
          },
          { required: ['name'] },
        ),
      },
      { required: ['endpoint', 'bucket', 'credentialsSecretRef'] },
    ),
  },
  { required: ['s3'] },
);

const CONDITIONS = conditionsSchema(
  'Ready (True once the backup is complete), Reconciling (True while it runs) and Stalled (True when it failed; the reason says why).',
);

const immutableSpec = {
  'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'a Backup is one backup: its spec cannot change; create another Backup' }],
};

export interface BackupKindDefinition {
  kind: string;
  plural: string;
  singular: string;
  description: string;
  spec: Schema;
  status: Schema;
  columns: Record<string, unknown>[];
  /** The longest name: what the generated names (Job, scheduled Backups) add must still fit. */
  maxName: { length: number; why: string };
}

export const backupDefinition: BackupKindDefinition = {
  kind: 'Backup',
  plural: 'backups',
  singular: 'backup',
  description:
    'One backup of a BoxRepository, FileShare or TerminalPool (its database schema and the stored objects its rows name), run once as a Job with `boxyard backup` into S3.',
  spec: object('What to back up and where to.', { source: SOURCE, destination: DESTINATION }, { required: ['source', 'destination'], ...immutableSpec }),
  status: object('Observed state, written by the operator.', {
    observedGeneration: integer('The generation of the spec the status describes.', { format: 'int64' }),
    conditions: CONDITIONS,
    phase: string('Pending, Running, Completed or Failed.', { enum: ['Pending', 'Running', 'Completed', 'Failed'] }),
    jobName: string('The Job that runs the backup.'),
    startedAt: string('When the Job was created.', { format: 'date-time' }),
    completedAt: string('When the backup completed or failed.', { format: 'date-time' }),
    location: string('s3://bucket/prefix of the backup (manifest.json and the files it lists).'),
    size: integer('Bytes written (every file, manifest included).', { format: 'int64' }),
    objectCount: integer('Stored objects in the backup (the objects the rows name).', { format: 'int64' }),
    boxyardVersion: string('Boxyard version that made the backup (a restore needs this version or newer).'),
    error: string('Why the backup failed.', { maxLength: 4096 }),
  }),
  columns: [
    { name: 'Kind', type: 'string', jsonPath: '.spec.source.kind' },
    { name: 'Source', type: 'string', jsonPath: '.spec.source.name' },
    { name: 'Phase', type: 'string', jsonPath: '.status.phase' },
    { name: 'Size', type: 'integer', jsonPath: '.status.size' },
    { name: 'Location', type: 'string', jsonPath: '.status.location', priority: 1 },
    { name: 'Error', type: 'string', jsonPath: '.status.error', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  maxName: { length: 52, why: 'its Job is <name>-backup' },
};

export const scheduledBackupDefinition: BackupKindDefinition = {
  kind: 'ScheduledBackup',
  plural: 'scheduledbackups',
  singular: 'scheduledbackup',
  description:
    'Backups of a BoxRepository, FileShare or TerminalPool on a cron schedule: each run creates a Backup; finished Backups beyond the retention are deleted with their data.',
  spec: object(
    'When, what, where, and how many to keep.',
    {
      schedule: string(
        'Cron schedule, five fields (minute hour day-of-month month day-of-week), in UTC, e.g. "0 3 * * *". A run still going when the next is due makes that one wait.',
        { minLength: 1, maxLength: 128 },
      ),
      suspend: boolean('Create no new Backups (retention still applies).', false),
      source: SOURCE,
      destination: DESTINATION,
      retention: object(
        'Which finished Backups of this schedule to keep; the newest completed one is always kept. Failed Backups older than the newest completed one are deleted.',
        {
          keepLast: integer('Completed Backups to keep.', { default: 7, minimum: 1, maximum: 1000 }),
          maxAge: string('Delete Backups older than this (e.g. 30d, 12h, 90m), even within keepLast.', { pattern: '^[0-9]{1,6}(m|h|d)$' }),
        },
        { default: {} },
      ),
    },
    { required: ['schedule', 'source', 'destination'] },
  ),
  status: object('Observed state, written by the operator.', {
    observedGeneration: integer('The generation of the spec the status describes.', { format: 'int64' }),
    conditions: CONDITIONS,
    lastScheduleTime: string('The scheduled time of the last Backup created.', { format: 'date-time' }),
    nextScheduleTime: string('When the next Backup is due.', { format: 'date-time' }),
    lastBackupName: string('The last Backup created.'),
  }),
  columns: [
    { name: 'Schedule', type: 'string', jsonPath: '.spec.schedule' },
    { name: 'Kind', type: 'string', jsonPath: '.spec.source.kind' },
    { name: 'Source', type: 'string', jsonPath: '.spec.source.name' },
    { name: 'Last', type: 'date', jsonPath: '.status.lastScheduleTime' },
    { name: 'Next', type: 'string', jsonPath: '.status.nextScheduleTime' },
    { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  maxName: { length: 39, why: 'its Backups are <name>-<yyyymmddhhmm>, at most 52 characters' },
};

export const backupKinds = [backupDefinition, scheduledBackupDefinition];

export function backupCrdFor(definition: BackupKindDefinition): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${definition.plural}.${GROUP}`, labels: { 'app.kubernetes.io/name': 'boxyard', 'app.kubernetes.io/part-of': 'boxyard' } },
    spec: {
      group: GROUP,
      scope: 'Namespaced',
      names: { kind: definition.kind, listKind: `${definition.kind}List`, plural: definition.plural, singular: definition.singular, categories: ['boxyard'] },
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: definition.columns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: definition.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: definition.spec,
                status: definition.status,
              },
              'x-kubernetes-validations': [
                {
                  rule: `size(self.metadata.name) <= ${definition.maxName.length}`,
                  message: `metadata.name must be at most ${definition.maxName.length} characters: ${definition.maxName.why}`,
                },
              ],
            },
          },
        },
      ],
    },
  };
}
