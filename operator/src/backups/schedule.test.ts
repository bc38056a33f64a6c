// Pure logic of ScheduledBackup: when a run is due (croner, UTC) and which finished Backups retention deletes.
import { describe, expect, it } from 'vitest';
import { backupsToPrune, dueRun, parseSchedule, ScheduleError, scheduledBackupName } from './schedule.ts';
import type { Backup, BackupPhase, ScheduledBackup } from './types.ts';

const schedule = (retention: ScheduledBackup['spec']['retention']): ScheduledBackup => ({
  apiVersion: 'boxyard.io/v1alpha1',
  kind: 'ScheduledBackup',
  metadata: { name: 'nightly', namespace: 'apps' },
  spec: {
    schedule: '0 3 * * *',
    suspend: false,
    source: { kind: 'FileShare', name: 'files' },
    destination: {
      s3: { endpoint: 'http://s3', bucket: 'b', region: 'us-east-1', prefix: 'p', credentialsSecretRef: { name: 's3', accessKeyKey: 'a', secretKeyKey: 's' } },
    },
    retention,
  },
});
const backup = (name: string, at: string, phase: BackupPhase): Backup => ({
  apiVersion: 'boxyard.io/v1alpha1',
  kind: 'Backup',
  metadata: { name, namespace: 'apps', creationTimestamp: at },
  spec: schedule({ keepLast: 1 }).spec,
  status: { phase },
});

describe('schedule', () => {
  it('refuses what is not a five-field cron schedule, saying why', () => {
    for (const bad of ['61 * * * *', 'every day', '* * * * * *', '']) expect(() => parseSchedule(bad)).toThrow(ScheduleError);
    expect(() => parseSchedule('61 * * * *')).toThrow(/minute/);
  });

  it('is due at the latest run after the last one, once, and not before its time', () => {
    const cron = parseSchedule('*/5 * * * *');
    expect(dueRun(cron, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:04:59Z'))).toBeUndefined();
    expect(dueRun(cron, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T00:05:00Z'))?.toISOString()).toBe('2026-01-01T00:05:00.000Z');
    // Missed runs while the operator was away: one run, the latest.
    expect(dueRun(cron, new Date('2026-01-01T00:00:00Z'), new Date('2026-01-01T01:02:00Z'))?.toISOString()).toBe('2026-01-01T01:00:00.000Z');
    expect(dueRun(cron, new Date('2026-01-01T01:00:00Z'), new Date('2026-01-01T01:02:00Z'))).toBeUndefined();
  });

  it('names a run after the schedule and its UTC time', () => {
    expect(scheduledBackupName(schedule({ keepLast: 1 }), new Date('2026-11-27T03:05:00Z'))).toBe('nightly-202611270305');
  });
});

describe('retention', () => {
  const now = new Date('2026-01-10T00:00:00Z');
  const all = [
    backup('d9', '2026-01-09T00:00:00Z', 'Completed'),
    backup('d8', '2026-01-08T00:00:00Z', 'Failed'),
    backup('d7', '2026-01-07T00:00:00Z', 'Completed'),
    backup('d6', '2026-01-06T00:00:00Z', 'Completed'),
    backup('d5', '2026-01-05T00:00:00Z', 'Failed'),
    backup('d10', '2026-01-09T23:59:00Z', 'Running'),
  ];
  const names = (list: Backup[]) => list.map((b) => b.metadata.name).sort();

  it('keeps the newest keepLast completed Backups and drops failed ones older than the newest completed', () => {
    expect(names(backupsToPrune(schedule({ keepLast: 2 }), all, now))).toEqual(['d5', 'd6', 'd8']);
  });

  it('drops what is older than maxAge, but never the newest completed Backup nor a running one', () => {
    expect(names(backupsToPrune(schedule({ keepLast: 10, maxAge: '2d' }), all, now))).toEqual(['d5', 'd6', 'd7', 'd8']);
    expect(names(backupsToPrune(schedule({ keepLast: 10, maxAge: '1m' }), all, now))).toEqual(['d5', 'd6', 'd7', 'd8']);
  });
});
