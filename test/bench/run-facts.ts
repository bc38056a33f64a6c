// What the figures of a bench run depend on besides the code, for the page it writes (report.ts): the machine and
// the checkout. Figures from a 2-core machine with a compiler running beside the bench are not comparable with an
// idle one's, so each section also records the load average as it started and as it ended.
import { execFileSync } from 'node:child_process';
import { arch, cpus, loadavg, release, totalmem, type } from 'node:os';

const GiB = 1024 ** 3;

/** `2 × AMD EPYC 7763 64-Core Processor, 7.8 GiB memory, Linux 6.1.0-18-amd64 (x64)`. */
export function machine(): string {
  const processors = cpus();
  const model = processors[0]?.model.replace(/\s+/g, ' ').trim() || 'unknown CPU';
  return `${processors.length} × ${model}, ${(totalmem() / GiB).toFixed(1)} GiB memory, ${type()} ${release()} (${arch()})`;
}

/** The 1-minute load average now (at a section's end it includes the bench's own processes). */
export const loadAverage = (): string => loadavg()[0]!.toFixed(2);

/**
 * The short commit of `root`'s checkout, and whether it has changes the commit does not hold (the generated page
 * itself, when inside the checkout, does not count: every run changes it).
 */
export function checkout(root: string, page?: string): string {
  const git = (...args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
  try {
    const commit = git('rev-parse', '--short', 'HEAD');
    const changes = git('status', '--porcelain', '--', '.', ...(page === undefined ? [] : [`:(exclude)${page}`]));
    return changes === '' ? `\`${commit}\`` : `\`${commit}\` with uncommitted changes`;
  } catch {
    return 'unknown (not a git checkout)';
  }
}
