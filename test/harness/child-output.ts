// How the client suites run a real command line program (vagrant, a pasted shell line): its exit code and what it
// printed, stdout and stderr together in the order they came, as a user sees them in a terminal.
import type { ChildProcess } from 'node:child_process';

export interface Finished {
  code: number | null;
  output: string;
}

/** Resolves when `child` (spawned with piped stdout and stderr) has exited and closed its output. */
export function finished(child: ChildProcess): Promise<Finished> {
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}
