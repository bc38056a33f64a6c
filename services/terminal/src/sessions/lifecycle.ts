// A session's state changes once it exists: waiting for its start, launching its agent, stopping it, recording its
// exit. All are conditional UPDATEs (store.ts), so two gateway replicas never both act on one session.
import { HttpError, ignoreError } from '@boxyard/kit';
import { terminateAgent, type AgentCredentials } from '../agent/client.ts';
import { sessionKeys, type GatewayKeys, type SignedChallenge } from '../agent/handshake.ts';
import type { StartedAgent } from '../backends/types.ts';
import type { ExitReason } from '../protocol.ts';
import type { SessionServiceOptions } from './service.ts';
import type { SessionRow, SessionStore } from './store.ts';

/** What the session service's functions share. */
export interface SessionContext {
  readonly options: SessionServiceOptions;
  readonly store: SessionStore;
  /** Set by close(): agent exits are no longer recorded, and the reaper stops. */
  closed: boolean;
  /** Who wants to know when a session runs or ends (recording, audit): see SessionService.onChange. */
  listeners: ((change: SessionChange) => void)[];
  /**
   * Told as soon as a session's agent is ready, before its row says so: the first attach is prepared from here
   * (attach-ahead.ts). `challenge` is the one the agent was started with, which `agent.answer` answers.
   */
  agentReady?: (agent: StartedAgent, credentials: AgentCredentials, challenge: SignedChallenge) => void;
  /** Told when a start lets its agent go after all (failed, or stopped while starting): what was prepared goes. */
  agentReleased?: (sessionId: string) => void;
}

/** What a start makes for its agent before it launches it: the session's keys and the first attach's challenge. */
export interface LaunchKeys {
  keys: GatewayKeys;
  challenge: SignedChallenge;
}

/** A session began running, or ended (and why). */
export type SessionChange = { kind: 'running'; row: SessionRow } | { kind: 'ended'; row: SessionRow; reason: string };

const tell = (ctx: SessionContext, change: SessionChange) => {
  for (const listener of ctx.listeners) listener(change);
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const secretOf = ({ options }: SessionContext, row: SessionRow) => options.secretBox.open(row.agent_secret, row.id);

export const credentialsOf = (ctx: SessionContext, row: SessionRow): AgentCredentials => ({ sessionId: row.id, keys: sessionKeys(secretOf(ctx, row)) });

/** Waits while another request (maybe on another replica) is starting this session. */
export async function settled({ options, store }: SessionContext, id: string): Promise<SessionRow | null> {
  const deadline = Date.now() + (options.startTimeoutSeconds + 15) * 1000;
  for (;;) {
    const row = await store.get(id);
    if (!row || row.state !== 'starting' || Date.now() > deadline) return row;
    await sleep(200);
  }
}

/** The insert of a session whose agent was starting did not commit (launch releases the agent and rethrows the cause). */
class NotInserted extends Error {
  constructor(cause: unknown) {
    super('the session row was not inserted', { cause });
  }
}

/** What starting a session's agent needs of its row (known before the row is written). */
export type LaunchRow = Pick<SessionRow, 'id' | 'owner_id' | 'owner_username' | 'owner_provider_identity' | 'owner_role' | 'expires_at'>;

/**
 * Starts the agent of a session being inserted; a start that fails marks it failed and releases what it got. The
 * agent starts while `committed` (the insert's transaction) is still under way: its row is only written to once
 * that has committed, and when it fails instead the agent is released (the start throws).
 */
export async function launch(ctx: SessionContext, row: LaunchRow, made: Promise<LaunchKeys>, committed: Promise<unknown>): Promise<SessionRow> {
  const { options, store } = ctx;
  const { backend, sessions, log } = options;
  const { keys, challenge } = await made;
  const timer = options.metrics?.startDuration.startTimer({ backend: backend.kind });
  // Kept here too: the row's copy is written in the background and may not be there yet when the start fails.
  let resource: string | null = null;
  try {
    const agent = await backend.start(
      {
        sessionId: row.id,
        ownerId: row.owner_id,
        ownerName: row.owner_username,
        ownerProviderIdentity: row.owner_provider_identity ?? undefined,
        ownerRole: row.owner_role,
        agentKey: keys.agentKey,
        gatewayPublicKey: keys.gatewayPublicKey,
        expiresAt: row.expires_at,
        idleTimeoutSeconds: sessions.idle_timeout_seconds,
        reattachGraceSeconds: sessions.reattach_grace_seconds,
        scrollbackBytes: sessions.scrollback_bytes,
        challenge,
      },
      (name) => {
        resource = name;
        void committed
          .then(() => store.setResource(row.id, name))
          .catch(ignoreError('the resource name is only a hint for release; release also finds the agent by session id'));
      },
    );
    ctx.agentReady?.(agent, { sessionId: row.id, keys }, challenge);
    try {
      await committed;
    } catch (failure) {
      throw new NotInserted(failure);
    }
    const running = await store.markRunning(row.id, agent);
    timer?.({ outcome: 'started' });
    if (running) {
      tell(ctx, { kind: 'running', row: running });
      return running;
    }
    // Stopped while it was starting: don't leave the agent behind.
    ctx.agentReleased?.(row.id);
    await backend.release({ id: row.id, resource: agent.resource, address: agent.address }).catch(ignoreError('the reaper releases what this could not'));
    const current = await store.get(row.id);
    if (current) return current;
    throw new HttpError(503, 'The session was stopped while it was starting');
  } catch (error) {
    ctx.agentReleased?.(row.id);
    if (error instanceof HttpError) throw error;
    if (error instanceof NotInserted) {
      // No session row (a start racing for the same cookie won, or the database failed): the agent goes.
      await backend.release({ id: row.id, resource, address: null }).catch(ignoreError('the reaper releases what this could not'));
      throw error.cause;
    }
    timer?.({ outcome: 'failed' });
    log.error({ err: error, session: row.id }, 'terminal session failed to start');
    // The row to mark failed is there once its transaction has ended (or never: then nothing is marked).
    await committed.catch(ignoreError('a start whose insert failed has no row to mark; its caller reports that failure'));
    // Release first: if the database is what failed, the pod or process still goes (the reaper fails the row later).
    resource ??= (await store.get(row.id).catch(ignoreError('without the row, release goes by session id alone')))?.agent_resource ?? null;
    await backend.release({ id: row.id, resource, address: null }).catch(ignoreError('the reaper releases what this could not'));
    await store
      .markFailed(row.id, 'start_failed')
      .catch((failure: unknown) => log.warn({ err: failure, session: row.id }, 'could not mark the failed start; the reaper will'));
    throw new HttpError(503, `Could not start the terminal: ${(error as Error).message}`);
  }
}

export async function stopSession(ctx: SessionContext, id: string, reason: ExitReason): Promise<SessionRow | null> {
  const {
    store,
    options: { backend, log },
  } = ctx;
  const claimed = await store.claimStop(id, reason);
  if (!claimed) return store.get(id);
  if (claimed.agent_address) {
    try {
      // The agent ends the shell and tells every attached socket why, before its resources go.
      await terminateAgent(claimed.agent_address, credentialsOf(ctx, claimed), reason);
    } catch (error) {
      log.warn({ err: error, session: id }, 'could not ask the agent to terminate; releasing its resources');
    }
  }
  await backend.release({ id, resource: claimed.agent_resource, address: claimed.agent_address }).catch((error: unknown) => {
    log.error({ err: error, session: id }, 'could not release the session; the reaper will retry');
  });
  const stopped = (await store.markStopped(id)) ?? (await store.get(id));
  if (stopped) tell(ctx, { kind: 'ended', row: stopped, reason });
  return stopped;
}

export async function markExited(ctx: SessionContext, id: string, exitCode: number | null, reason: 'exited' | 'lost' = 'exited'): Promise<void> {
  const {
    store,
    options: { backend, log },
  } = ctx;
  const row = await store.markExited(id, exitCode, reason);
  if (!row) {
    if (exitCode !== null) await store.recordExitCode(id, exitCode);
    return;
  }
  tell(ctx, { kind: 'ended', row, reason });
  log.info({ session: id, exitCode, reason }, 'terminal session ended');
  await backend.release({ id, resource: row.agent_resource, address: row.agent_address }).catch((error: unknown) => {
    log.warn({ err: error, session: id }, 'could not release an ended session');
  });
}
