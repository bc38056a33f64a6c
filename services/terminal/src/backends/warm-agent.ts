// A spare agent process for the local backend: started ahead of time with no session, so a start only has to
// hand it the session's settings instead of waiting for Node to boot and load the agent's code (~2/3 of a cold
// start). Bounded to `count` spares; a spare serves exactly one session (it learns the owner, secret hash and
// limits only when taken, and is replaced then); spares are killed at close and leave by themselves when their
// stdin closes (the gateway is gone).
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';

const REFILL_DELAY_MS = 500;

export interface Spare {
  child: ChildProcess;
  /** On the spare's command line (`--warm <slot>`): how its process is recognised once it serves a session. */
  slot: string;
}

export interface WarmAgents {
  /** A live spare for one session (a new one is started to replace it), or undefined: start a cold agent. */
  take(): Spare | undefined;
  /** Pids of the spares waiting now. */
  waiting(): number[];
  close(): void;
}

export function createWarmAgents(count: number, spawnSpare: (slot: string) => ChildProcess): WarmAgents {
  const spares: Spare[] = [];
  let closed = false;

  const alive = (spare: Spare) => spare.child.exitCode === null && spare.child.signalCode === null;
  const fill = () => {
    if (closed) return;
    for (let i = spares.filter(alive).length; i < count; i++) {
      const slot = randomUUID();
      const child = spawnSpare(slot);
      const spare = { child, slot };
      // A spare that dies unclaimed is dropped (not restarted here: a crashing agent must not loop).
      child.once('exit', () => {
        const index = spares.indexOf(spare);
        if (index >= 0) spares.splice(index, 1);
      });
      child.once('error', () => {});
      spares.push(spare);
    }
  };
  // Off the caller's path: a replacement (a Node start, ~0.2 s of a core) waits until the session that took the
  // spare has its shell up and its first prompt shown, instead of competing with them for the CPU.
  const refill = (delayMs: number) => setTimeout(fill, delayMs).unref();
  if (count > 0) refill(0);

  return {
    take() {
      if (count === 0) return undefined;
      let spare: Spare | undefined;
      while ((spare = spares.shift()) && !alive(spare)) {
        // dead, drop it
      }
      refill(REFILL_DELAY_MS);
      return spare;
    },
    waiting: () => spares.filter(alive).map((spare) => spare.child.pid!),
    close() {
      closed = true;
      for (const spare of spares.splice(0)) spare.child.kill('SIGKILL');
    },
  };
}
