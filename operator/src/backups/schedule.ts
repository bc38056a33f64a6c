// When a ScheduledBackup is due, and which of its Backups to prune. Cron expressions are read by croner (a
// maintained parser with no dependencies that computes next occurrences without starting timers), in UTC,
// five fields only: the format users know from CronJob.
import { Cron } from 'croner';
import type { Backup, ScheduledBackup } from './types.ts';

export class ScheduleError extends Error {}

export function parseSchedule(pattern: string): Cron {
  try {
    return new Cron(pattern, { timezone: 'UTC', mode: '5-part' });
  } catch (error) {
    throw new ScheduleError(
      `spec.schedule "${pattern}" is not a cron schedule: ${(error as Error).message.replace(/^CronPattern: /, '')} (five fields: minute hour day-of-month month day-of-week)`,
    );
  }
}

/**
 * The run due now, if any: the latest scheduled time after `last` (the last run's, or the object's creation) and
 * not after `now`. Runs missed while the operator was away become one run, as for a CronJob.
 */
export function dueRun(cron: Cron, last: Date, now: Date): Date | undefined {
  let due: Date | undefined;
  let next = cron.nextRun(last);
  // Bounded: a schedule every minute missed for a week is 10,080 steps; beyond that, only the newest matters.
  for (let i = 0; next && next <= now && i < 20_000; i++) {
    due = next;
    next = cron.nextRun(next);
  }
  if (next && next <= now) due = cron.previousRuns(1, now)[0] ?? due;
  return due;
}

const UNIT_MS = { m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

export function maxAgeMs(maxAge: string | undefined): number | undefined {
  if (!maxAge) return undefined;
  const unit = maxAge.at(-1) as keyof typeof UNIT_MS;
  return Number(maxAge.slice(0, -1)) * UNIT_MS[unit];
}

const created = (b: Backup) => Date.parse(b.metadata.creationTimestamp ?? '') || 0;

/**
 * Finished Backups of the schedule to delete: completed ones beyond keepLast or older than maxAge (never the newest
 * completed one), and failed ones older than the newest completed one or than maxAge. Running ones are never pruned.
 */
export function backupsToPrune(schedule: ScheduledBackup, backups: readonly Backup[], now: Date): Backup[] {
  const newestFirst = [...backups].sort((a, b) => created(b) - created(a) || (a.metadata.name < b.metadata.name ? 1 : -1));
  const completed = newestFirst.filter((b) => b.status?.phase === 'Completed');
  const failed = newestFirst.filter((b) => b.status?.phase === 'Failed');
  const age = maxAgeMs(schedule.spec.retention.maxAge);
  const tooOld = (b: Backup) => age !== undefined && now.getTime() - created(b) > age;
  const prune = completed.filter((b, index) => index > 0 && (index >= schedule.spec.retention.keepLast || tooOld(b)));
  const newestCompleted = completed[0] ? created(completed[0]) : undefined;
  prune.push(...failed.filter((b) => (newestCompleted !== undefined && created(b) < newestCompleted) || tooOld(b)));
  return prune;
}

/** The Backup a scheduled run creates: named after the schedule and the run's time (UTC), so a run is created once. */
export const scheduledBackupName = (schedule: ScheduledBackup, at: Date): string =>
  `${schedule.metadata.name}-${at.toISOString().slice(0, 16).replaceAll(/[-:T]/g, '').toLowerCase()}`;
