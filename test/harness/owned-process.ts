// A tool process the harness started: killed if the test process exits first, and stopped politely (SIGTERM, then
// SIGKILL after a grace period).
import type { ChildProcess } from 'node:child_process';

export interface OwnedProcess {
  /** Resolves when the process has exited. */
  exited: Promise<void>;
  stop(): Promise<void>;
}

export function ownProcess(child: ChildProcess, graceMs = 10_000): OwnedProcess {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  return {
    exited,
    async stop() {
      process.removeListener('exit', killOnExit);
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}
