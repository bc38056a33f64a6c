// What the scale-* sections read about a process from /proc: CPU time (utime + stime of /proc/<pid>/stat, or of
// a shell's reaped children), resident memory (VmRSS) and proportional memory (Pss of smaps_rollup, so pages shared
// by many processes of the same binary are split between them rather than counted in each).
import { readFileSync } from 'node:fs';

/** Clock ticks per second of /proc/<pid>/stat's times (Linux: USER_HZ, 100 on every architecture Node runs on). */
const TICKS = 100;

/** The fields of a /proc/<pid>/stat line after the command (which may hold spaces and parentheses). */
export function statFields(line: string): string[] {
  return line
    .slice(line.lastIndexOf(')') + 2)
    .trim()
    .split(' ');
}

/** utime + stime of a process so far, seconds; 0 once it is gone. Field 14 and 15 of stat (0-based 11, 12 after the command). */
export function cpuOf(pid: number): number {
  try {
    const fields = statFields(readFileSync(`/proc/${pid}/stat`, 'utf8'));
    return (Number(fields[11]) + Number(fields[12])) / TICKS;
  } catch {
    return 0;
  }
}

/** cutime + cstime from a stat line: CPU of the children the process has waited for. */
export function childrenCpuOf(line: string): number {
  const fields = statFields(line);
  return (Number(fields[13]) + Number(fields[14])) / TICKS;
}

/** CPU seconds of all these processes so far. */
export const cpuOfAll = (pids: number[]) => pids.reduce((sum, pid) => sum + cpuOf(pid), 0);

function kiB(file: string, field: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${field}:`));
    return Number(/(\d+)/.exec(line ?? '')?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Resident memory, bytes. */
export const rssOf = (pid: number) => kiB(`/proc/${pid}/status`, 'VmRSS') * 1024;
/** Proportional set size, bytes. */
export const pssOf = (pid: number) => kiB(`/proc/${pid}/smaps_rollup`, 'Pss') * 1024;
