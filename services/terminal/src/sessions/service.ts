// Session lifecycle: start (idempotent per user and terminal_cookie, capped), stop, exit, and the reaper that
// ends sessions past their lifetime, idle time-out or reattach grace, and notices agents that vanished. All
// state changes are conditional UPDATEs, so two gateway replicas never both act on one session.
import { randomUUID } from 'node:crypto';
import { HttpError } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import { sql, UniqueIntegrityConstraintViolationError, type DatabasePool } from 'slonik';
import { agentStatus, AgentUnreachableError, connectAgent, terminateAgent, type AgentCredentials } from '../agent/client.ts';
import { sessionKeys } from '../agent/handshake.ts';
import { expiryReason } from '../agent/expiry.ts';
import type { SessionBackend } from '../backends/types.ts';
import type { SessionsConfig } from '../config.ts';
import type { ExitReason } from '../protocol.ts';
import { newAgentSecret, type SecretBox } from './agent-secret.ts';
import type { SessionMetrics } from './metrics.ts';
import { createSessionStore, type SessionRow } from './store.ts';

export interface Caller {
  id: string;
  username: string;
  role: string;
}

export interface SessionServiceOptions {
  pool: DatabasePool;
  backend: SessionBackend;
  sessions: SessionsConfig;
  secretBox: SecretBox;
  log: FastifyBaseLogger;
  /** How long a start may take before it counts as failed (pod scheduling, image pulls). */
  startTimeoutSeconds: number;
  metrics?: SessionMetrics;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function limitReached(message: string, limit: number, soonest: number | null): HttpError {
  // The caps are concurrency limits: a slot frees when a session ends; the soonest absolute expiry bounds it.
  const reset = Math.max(1, Math.ceil(((soonest ?? Date.now() + 60_000) - Date.now()) / 1000));
  return new HttpError(429, message, {
    headers: { 'RateLimit-Limit': String(limit), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset), 'Retry-After': String(reset) },
  });
}

export function createSessionService(options: SessionServiceOptions) {
  const { pool, backend, sessions, secretBox, log } = options;
  const store = createSessionStore(pool);
  const secretOf = (row: SessionRow) => secretBox.open(row.agent_secret, row.id);
  const credentialsOf = (row: SessionRow): AgentCredentials => ({ sessionId: row.id, keys: sessionKeys(secretOf(row)) });
  let reaper: NodeJS.Timeout | undefined;
  let reaping: Promise<void> | undefined;
  let closed = false;

  /** Waits while another request (maybe on another replica) is starting this session. */
  async function settled(id: string): Promise<SessionRow | null> {
    const deadline = Date.now() + (options.startTimeoutSeconds + 15) * 1000;
    for (;;) {
      const row = await store.get(id);
      if (!row || row.state !== 'starting' || Date.now() > deadline) return row;
      await sleep(200);
    }
  }

  async function launch(row: SessionRow, secret: string): Promise<SessionRow> {
    const keys = sessionKeys(secret);
    const timer = options.metrics?.startDuration.startTimer({ backend: backend.kind });
    try {
      const agent = await backend.start(
        {
          sessionId: row.id,
          ownerId: row.owner_id,
          ownerName: row.owner_username,
          ownerProviderIdentity: row.owner_provider_identity ?? undefined,
          agentKey: keys.agentKey,
          gatewayPublicKey: keys.gatewayPublicKey,
          expiresAt: row.expires_at,
          idleTimeoutSeconds: sessions.idle_timeout_seconds,
          reattachGraceSeconds: sessions.reattach_grace_seconds,
          scrollbackBytes: sessions.scrollback_bytes,
        },
        (resource) => void store.setResource(row.id, resource).catch(() => {}),
      );
      const running = await store.markRunning(row.id, agent);
      timer?.({ outcome: 'started' });
      if (running) return running;
      // Stopped while it was starting: don't leave the agent behind.
      await backend.release({ id: row.id, resource: agent.resource, address: agent.address }).catch(() => {});
      const current = await store.get(row.id);
      if (current) return current;
      throw new HttpError(503, 'The session was stopped while it was starting');
    } catch (error) {
      if (error instanceof HttpError) throw error;
      timer?.({ outcome: 'failed' });
      log.error({ err: error, session: row.id }, 'terminal session failed to start');
      await store.markFailed(row.id, 'start_failed');
      await backend.release({ id: row.id, resource: (await store.get(row.id))?.agent_resource ?? null, address: null }).catch(() => {});
      throw new HttpError(503, `Could not start the terminal: ${(error as Error).message}`);
    }
  }

  async function stopSession(id: string, reason: ExitReason): Promise<SessionRow | null> {
    const claimed = await store.claimStop(id, reason);
    if (!claimed) return store.get(id);
    if (claimed.agent_address) {
      try {
        // The agent ends the shell and tells every attached socket why, before its resources go.
        await terminateAgent(claimed.agent_address, credentialsOf(claimed), reason);
      } catch (error) {
        log.warn({ err: error, session: id }, 'could not ask the agent to terminate; releasing its resources');
      }
    }
    await backend.release({ id, resource: claimed.agent_resource, address: claimed.agent_address }).catch((error: unknown) => {
      log.error({ err: error, session: id }, 'could not release the session; the reaper will retry');
    });
    return (await store.markStopped(id)) ?? store.get(id);
  }

  async function markExited(id: string, exitCode: number | null, reason: 'exited' | 'lost' = 'exited'): Promise<void> {
    const row = await store.markExited(id, exitCode, reason);
    if (!row) {
      if (exitCode !== null) await store.recordExitCode(id, exitCode);
      return;
    }
    log.info({ session: id, exitCode, reason }, 'terminal session ended');
    await backend.release({ id, resource: row.agent_resource, address: row.agent_address }).catch((error: unknown) => {
      log.warn({ err: error, session: id }, 'could not release an ended session');
    });
  }

  backend.onAgentExit?.((id, code) => {
    if (!closed) void markExited(id, code).catch((error: unknown) => log.warn({ err: error, session: id }, 'could not record an agent exit'));
  });

  async function checkSession(row: SessionRow): Promise<void> {
    const now = Date.now();
    if (row.state === 'starting') {
      // The replica starting it is gone, or the start hangs.
      if (now - row.created_at > (options.startTimeoutSeconds + 60) * 1000) {
        await store.markFailed(row.id, 'start_failed');
        await backend.release({ id: row.id, resource: row.agent_resource, address: row.agent_address }).catch(() => {});
      }
      return;
    }
    if (row.state === 'stopping') {
      // Its stopper died half-way (claimDue only returns it once the stop's own minute has passed).
      await backend.release({ id: row.id, resource: row.agent_resource, address: row.agent_address });
      await store.markStopped(row.id);
      return;
    }
    if (now >= row.expires_at) {
      await stopSession(row.id, 'lifetime');
      return;
    }
    if (!row.agent_address) return;
    let status;
    try {
      status = await agentStatus(row.agent_address, credentialsOf(row));
    } catch (error) {
      if (!(error instanceof AgentUnreachableError)) throw error;
      const probe = await backend.probe({ id: row.id, resource: row.agent_resource });
      if (probe.state === 'gone') await markExited(row.id, probe.exitCode, probe.exitCode === null ? 'lost' : 'exited');
      else log.warn({ session: row.id, err: error }, 'terminal agent unreachable; will retry');
      return;
    }
    if (status.exited) {
      await markExited(row.id, status.exit_code);
      return;
    }
    // Durations on the agent's clock, the absolute lifetime on the database's.
    const skew = now - status.now;
    await store.touch(row.id, status.last_activity_at + skew);
    const reason = expiryReason(
      { now, expiresAt: row.expires_at, lastActivityAt: status.last_activity_at + skew, attached: status.attached, detachedSince: status.detached_since === null ? null : status.detached_since + skew },
      { idleTimeoutMs: sessions.idle_timeout_seconds * 1000, reattachGraceMs: sessions.reattach_grace_seconds * 1000 },
    );
    if (reason) {
      log.info({ session: row.id, reason }, 'stopping terminal session');
      await stopSession(row.id, reason);
    }
  }

  async function reapOnce(): Promise<void> {
    const due = await store.claimDue(sessions.reaper_interval_seconds, 200);
    // A few at a time: each check may wait on an agent or the Kubernetes API.
    const queue = [...due];
    await Promise.all(
      Array.from({ length: Math.min(8, queue.length) }, async () => {
        for (let row = queue.shift(); row; row = queue.shift()) {
          try {
            await checkSession(row);
          } catch (error) {
            log.warn({ err: error, session: row.id }, 'reaper: session check failed');
          }
        }
      }),
    );
    await store.purgeEnded(sessions.retention_hours);
  }

  return {
    store,
    secretOf,

    /** The terminal stream of a running session's agent, once the backend and the agent vouch for the address. */
    async connect(row: SessionRow & { agent_address: string }) {
      await backend.verifyAddress?.({ id: row.id, resource: row.agent_resource, address: row.agent_address });
      return connectAgent(row.agent_address, credentialsOf(row));
    },

    /** Why the backend won't run shells for this user, or undefined (then it will). */
    refusal: (caller: { role: string }) => backend.refusal?.(caller),

    /** Stops every live session of a user (disabled or deleted account). */
    async stopAllOf(ownerId: string, reason: ExitReason = 'stopped'): Promise<number> {
      const live = await store.list({ ownerId, includeEnded: false });
      await Promise.all(live.map((row) => stopSession(row.id, reason)));
      return live.length;
    },

    async start(caller: Caller, cookie: string): Promise<{ session: SessionRow; reattached: boolean }> {
      const id = randomUUID();
      const agentSecret = newAgentSecret();
      let outcome: { kind: 'existing'; row: SessionRow } | { kind: 'created'; row: SessionRow };
      try {
        outcome = await pool.transaction(async (tx) => {
          // Starts are serialised (briefly: the spawn happens after commit) so the caps hold across replicas.
          await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('boxyard-terminal:start'))`);
          const live = await store.findLive(tx, caller.id, cookie);
          if (live) return { kind: 'existing' as const, row: live };
          const mine = await store.countLive(tx, caller.id);
          if (mine.count >= sessions.per_user_limit) {
            throw limitReached(`Session limit reached: at most ${sessions.per_user_limit} live sessions per user; stop one first`, sessions.per_user_limit, mine.soonest);
          }
          const all = await store.countLive(tx);
          if (all.count >= sessions.global_limit) {
            throw limitReached(`The service is at its limit of ${sessions.global_limit} live sessions; try again later`, sessions.global_limit, all.soonest);
          }
          const row = await store.insert(tx, {
            id,
            ownerId: caller.id,
            cookie,
            backend: backend.kind,
            sealedSecret: secretBox.seal(agentSecret, id),
            lifetimeSeconds: sessions.max_lifetime_seconds,
          });
          return { kind: 'created' as const, row };
        });
      } catch (error) {
        // The partial unique index caught a start racing outside the lock: that start's session is ours.
        if (!(error instanceof UniqueIntegrityConstraintViolationError)) throw error;
        const live = await pool.transaction((tx) => store.findLive(tx, caller.id, cookie));
        if (!live) throw error;
        outcome = { kind: 'existing', row: live };
      }
      if (outcome.kind === 'created') return { session: await launch(outcome.row, agentSecret), reattached: false };
      const row = outcome.row.state === 'starting' ? await settled(outcome.row.id) : outcome.row;
      if (!row || row.state !== 'running') throw new HttpError(503, 'The session with this terminal_cookie failed to start; try again');
      return { session: row, reattached: true };
    },

    list: (caller: Caller, includeEnded: boolean) => store.list({ ownerId: caller.role === 'admin' ? undefined : caller.id, includeEnded }),

    /** The session if the caller may see it (owner; admins: any), else null: unknown and foreign look the same. */
    async visible(caller: Caller, id: string): Promise<SessionRow | null> {
      const row = await store.get(id);
      if (!row || (row.owner_id !== caller.id && caller.role !== 'admin')) return null;
      return row;
    },

    stop: (id: string, reason: ExitReason = 'stopped') => stopSession(id, reason),
    markExited,
    settled,
    reapOnce,

    startReaper(): void {
      const tick = () => {
        if (closed || reaping) return;
        reaping = reapOnce()
          .catch((error: unknown) => log.warn({ err: error }, 'reaper round failed'))
          .finally(() => (reaping = undefined));
      };
      reaper = setInterval(tick, Math.max(1, Math.min(sessions.reaper_interval_seconds, 10)) * 1000);
      reaper.unref();
      tick();
    },

    async close(): Promise<void> {
      closed = true;
      if (reaper) clearInterval(reaper);
      await reaping;
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
