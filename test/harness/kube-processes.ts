// The control plane's processes (etcd, kube-apiserver, the controllers, kwok, the node's daemons): each logs to
// `<dir>/<name>.log`, is killed with this Node process at the latest, and fails a wait early when it exits.
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Component {
  name: string;
  binary: string;
  child: ChildProcess;
  logFile: string;
  exited: Promise<void>;
  exitCode?: number; // set once it has exited
}

// Children must not outlive this Node process: 'exit' handlers run synchronously, so SIGKILL is all we can do.
const live = new Set<ChildProcess>();
let exitHookInstalled = false;
function track(child: ChildProcess): void {
  live.add(child);
  child.once('exit', () => live.delete(child));
  if (!exitHookInstalled) {
    exitHookInstalled = true;
    process.once('exit', () => {
      for (const c of live) c.kill('SIGKILL');
    });
  }
}

function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export class Processes {
  private readonly components: Component[] = [];
  private stopping = false;
  private readonly dir: string;
  private readonly log: (line: string) => void;

  constructor(dir: string, log: (line: string) => void) {
    this.dir = dir;
    this.log = log;
  }

  start(name: string, binary: string, args: string[], env?: Record<string, string>): void {
    const logFile = join(this.dir, `${name}.log`);
    const fd = openSync(logFile, 'a');
    const child = spawn(binary, args, { stdio: ['ignore', fd, fd], env: env ? { ...process.env, ...env } : process.env });
    closeSync(fd); // the child holds its own copy
    track(child);
    const component: Component = { name, binary, child, logFile, exited: Promise.resolve() };
    component.exited = new Promise((resolve) => {
      child.once('exit', (code, signal) => {
        component.exitCode = code ?? -1;
        if (!this.stopping) this.log(`${name} exited (${signal ?? code}); log: ${logFile}`);
        resolve();
      });
      // A process that could not be spawned emits 'error' and never 'exit'.
      child.once('error', (error) => {
        component.exitCode = -1;
        this.log(`${name}: ${error.message}`);
        resolve();
      });
    });
    this.components.push(component);
  }

  /** Polls `check` until true; fails early, with the log tail, when a component exits. */
  async waitFor(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const dead = this.components.find((c) => c.exitCode !== undefined);
      if (dead) throw new Error(`${dead.name} exited (code ${dead.exitCode}) while waiting for ${what}; ${dead.logFile}:\n${tail(dead.logFile)}`);
      if (await check()) return;
      if (Date.now() > deadline) {
        const last = this.components.at(-1);
        throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}` + (last ? `; ${last.logFile}:\n${tail(last.logFile)}` : ''));
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** From now on, exits are expected (not logged). */
  markStopping(): void {
    this.stopping = true;
  }

  /** Stops them in reverse order of start. */
  async stopAll(): Promise<void> {
    this.stopping = true;
    // Controllers first, so they do not log errors against a vanishing apiserver; etcd last.
    for (const c of [...this.components].reverse()) {
      if (c.exitCode !== undefined) continue;
      c.child.kill('SIGTERM');
      const timer = setTimeout(() => c.child.kill('SIGKILL'), 5000);
      await c.exited;
      clearTimeout(timer);
    }
  }
}
