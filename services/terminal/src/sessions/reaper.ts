// The reaper: ends sessions past their lifetime, idle time-out or reattach grace, finishes stops and starts that
// their replica left half-way, and notices agents that vanished. Any replica may run it (claimDue hands each
// session to one).
import { agentStatus, AgentUnreachableError } from '../agent/client.ts';
import { expiryReason } from '../agent/expiry.ts';
import { credentialsOf, markExited, stopSession, type SessionContext } from './lifecycle.ts';
import type { SessionRow } from './store.ts';
import { ignoreError } from '@boxyard/kit';

/** The reaper's timer and the round under way. */
export interface ReaperRun {
  timer?: NodeJS.Timeout;
  round?: Promise<void>;
}

/** A session whose start or stop did not finish. True when it was one (then nothing more is checked). */
async function finishHalfDone({ options, store }: SessionContext, row: SessionRow, now: number): Promise<boolean> {
  if (row.state === 'starting') {
    // The replica starting it is gone, or the start hangs.
    if (now - row.created_at > (options.startTimeoutSeconds + 60) * 1000) {
      await store.markFailed(row.id, 'start_failed');
      await options.backend
        .release({ id: row.id, resource: row.agent_resource, address: row.agent_address })
        .catch(ignoreError('release is retried on the next reap while the row stays'));
    }
    return true;
  }
  if (row.state === 'stopping') {
    // Its stopper died half-way (claimDue only returns it once the stop's own minute has passed).
    await options.backend.release({ id: row.id, resource: row.agent_resource, address: row.agent_address });
    await store.markStopped(row.id);
    return true;
  }
  return false;
}

async function checkSession(ctx: SessionContext, row: SessionRow): Promise<void> {
  const {
    options: { backend, sessions, log },
    store,
  } = ctx;
  const now = Date.now();
  if (await finishHalfDone(ctx, row, now)) return;
  if (now >= row.expires_at) {
    await stopSession(ctx, row.id, 'lifetime');
    return;
  }
  if (!row.agent_address) return;
  let status;
  try {
    status = await agentStatus(row.agent_address, credentialsOf(ctx, row));
  } catch (error) {
    if (!(error instanceof AgentUnreachableError)) throw error;
    const probe = await backend.probe({ id: row.id, resource: row.agent_resource });
    if (probe.state === 'gone') await markExited(ctx, row.id, probe.exitCode, probe.exitCode === null ? 'lost' : 'exited');
    else log.warn({ session: row.id, err: error }, 'terminal agent unreachable; will retry');
    return;
  }
  if (status.exited) {
    await markExited(ctx, row.id, status.exit_code);
    return;
  }
  // Durations on the agent's clock, the absolute lifetime on the database's.
  const skew = now - status.now;
  await store.touch(row.id, status.last_activity_at + skew);
  const reason = expiryReason(
    {
      now,
      expiresAt: row.expires_at,
      lastActivityAt: status.last_activity_at + skew,
      attached: status.attached,
      detachedSince: status.detached_since === null ? null : status.detached_since + skew,
    },
    { idleTimeoutMs: sessions.idle_timeout_seconds * 1000, reattachGraceMs: sessions.reattach_grace_seconds * 1000 },
  );
  if (reason) {
    log.info({ session: row.id, reason }, 'stopping terminal session');
    await stopSession(ctx, row.id, reason);
  }
}

export async function reapOnce(ctx: SessionContext): Promise<void> {
  const {
    options: { sessions, log },
    store,
  } = ctx;
  const due = await store.claimDue(sessions.reaper_interval_seconds, 200);
  // A few at a time: each check may wait on an agent or the Kubernetes API.
  const queue = [...due];
  await Promise.all(
    Array.from({ length: Math.min(8, queue.length) }, async () => {
      for (let row = queue.shift(); row; row = queue.shift()) {
        try {
          await checkSession(ctx, row);
        } catch (error) {
          log.warn({ err: error, session: row.id }, 'reaper: session check failed');
        }
      }
    }),
  );
  await store.purgeEnded(sessions.retention_hours);
}

/** A round now, then one every reaper interval (at most 10 s); never two at once. */
export function startReaper(ctx: SessionContext, run: ReaperRun): void {
  const tick = () => {
    if (ctx.closed || run.round) return;
    run.round = reapOnce(ctx)
      .catch((error: unknown) => ctx.options.log.warn({ err: error }, 'reaper round failed'))
      .finally(() => (run.round = undefined));
  };
  run.timer = setInterval(tick, Math.max(1, Math.min(ctx.options.sessions.reaper_interval_seconds, 10)) * 1000);
  run.timer.unref();
  tick();
}

/** Stops the timer and waits for the round under way. */
export async function stopReaper(run: ReaperRun): Promise<void> {
  if (run.timer) clearInterval(run.timer);
  await run.round;
}
