// Session lifecycle: start (idempotent per user and terminal_cookie, capped), stop, exit, and the reaper that
// ends sessions past their lifetime, idle time-out or reattach grace, and notices agents that vanished. All
// state changes are conditional UPDATEs, so two gateway replicas never both act on one session.
// The parts: this file starts sessions, lifecycle.ts changes their state afterwards, reaper.ts runs the reaper.
import { AsyncResource } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import { HttpError, markHandled } from '@boxyard/kit';
import type { FastifyBaseLogger } from 'fastify';
import { sql, UniqueIntegrityConstraintViolationError, type DatabasePool } from 'slonik';
import {
  authorizationFrom,
  authorizeAttach,
  connectAgent,
  newChallenge,
  openAgentStream,
  type AgentCredentials,
  type AgentStream,
  type StreamOptions,
} from '../agent/client.ts';
import { sessionKeys, type SignedChallenge } from '../agent/handshake.ts';
import type { SessionBackend } from '../backends/types.ts';
import type { SessionsConfig } from '../config.ts';
import type { ExitReason } from '../protocol.ts';
import { newAgentSecret, type SecretBox } from './agent-secret.ts';
import { createAttachAhead } from './attach-ahead.ts';
import {
  credentialsOf,
  launch,
  markExited,
  secretOf,
  settled,
  stopSession,
  type LaunchKeys,
  type LaunchRow,
  type SessionChange,
  type SessionContext,
} from './lifecycle.ts';
import type { SessionMetrics } from './metrics.ts';
import { reapOnce, startReaper, stopReaper, type ReaperRun } from './reaper.ts';
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
  /** Open the first attach's agent stream during the start (users' streams are opened plainly: nothing records them). */
  streamAhead?: boolean;
}

/** What is prepared for a session's first attach. */
type Prepared = { stream: AgentStream } | { authorization: string };

type StartOutcome = { kind: 'existing'; row: SessionRow } | { kind: 'created'; row: SessionRow };

function limitReached(message: string, limit: number, soonest: number | null): HttpError {
  // The caps are concurrency limits: a slot frees when a session ends; the soonest absolute expiry bounds it.
  const reset = Math.max(1, Math.ceil(((soonest ?? Date.now() + 60_000) - Date.now()) / 1000));
  return new HttpError(429, message, {
    headers: { 'RateLimit-Limit': String(limit), 'RateLimit-Remaining': '0', 'RateLimit-Reset': String(reset), 'Retry-After': String(reset) },
  });
}

/**
 * The caller's live session of this cookie, or a new session row (under the caps), or an error. Once the caps allow
 * the new session, `admitted` is told (inside the transaction, before the insert), so its agent can start while the
 * insert commits.
 */
async function findOrInsert(
  { options, store }: SessionContext,
  caller: Caller,
  cookie: string,
  id: string,
  agentSecret: string,
  admitted: (row: LaunchRow, committed: Promise<unknown>) => void,
): Promise<StartOutcome> {
  const { pool, backend, sessions, secretBox } = options;
  // Whole milliseconds: the row and the agent hold the same absolute expiry.
  const expiresAt = Date.now() + sessions.max_lifetime_seconds * 1000;
  let told = false;
  const committed: Promise<StartOutcome> = pool.transaction(async (tx) => {
    // Starts are serialised (briefly: the agent starts while the insert commits) so the caps hold across replicas.
    await tx.query(sql.unsafe`select pg_advisory_xact_lock(hashtext('boxyard-terminal:start'))`);
    const counts = await store.countLive(tx, caller.id, cookie);
    const live = counts.live_id === null ? null : await store.findLive(tx, caller.id, cookie);
    if (live) return { kind: 'existing' as const, row: live };
    if (counts.mine >= sessions.per_user_limit) {
      throw limitReached(
        `Session limit reached: at most ${sessions.per_user_limit} live sessions per user; stop one first`,
        sessions.per_user_limit,
        counts.mine_soonest,
      );
    }
    if (counts.total >= sessions.global_limit) {
      throw limitReached(`The service is at its limit of ${sessions.global_limit} live sessions; try again later`, sessions.global_limit, counts.total_soonest);
    }
    // Once: a transaction the pool retries (deadlock, serialization failure) runs this again.
    if (!told) {
      told = true;
      const owner = { owner_id: caller.id, owner_username: caller.username, owner_role: caller.role, owner_provider_identity: counts.provider_identity };
      admitted({ id, ...owner, expires_at: expiresAt }, committed);
    }
    const row = await store.insert(tx, { id, ownerId: caller.id, cookie, backend: backend.kind, sealedSecret: secretBox.seal(agentSecret, id), expiresAt });
    return { kind: 'created' as const, row };
  });
  try {
    return await committed;
  } catch (error) {
    // The partial unique index caught a start racing outside the lock: that start's session is ours.
    if (!(error instanceof UniqueIntegrityConstraintViolationError)) throw error;
    const live = await pool.transaction((tx) => store.findLive(tx, caller.id, cookie));
    if (!live) throw error;
    return { kind: 'existing', row: live };
  }
}

async function startSession(ctx: SessionContext, caller: Caller, cookie: string): Promise<{ session: SessionRow; reattached: boolean }> {
  const id = randomUUID();
  const agentSecret = newAgentSecret();
  // The session's keys and the first attach's signed challenge (~0.5 ms of CPU: key derivation, an Ed25519 key and
  // signature) are made while the start's first statements are at the database, not after them.
  const made = new Promise<LaunchKeys>((resolve, reject) =>
    setImmediate(() => {
      try {
        const keys = sessionKeys(agentSecret);
        resolve({ keys, challenge: newChallenge({ sessionId: id, keys }) });
      } catch (error) {
        reject(error as Error);
      }
    }),
  );
  // Read by the launch; a start that finds this cookie's session running launches nothing.
  markHandled(made);
  let launching: Promise<SessionRow> | undefined;
  // Bound here: called inside the transaction, the launch must not run in its context (its queries use the pool).
  const admitted = AsyncResource.bind((row: LaunchRow, committed: Promise<unknown>) => {
    launching = launch(ctx, row, made, committed);
    // Read below when the insert committed; otherwise it only releases its agent, and the outcome says why.
    markHandled(launching);
  });
  const outcome = await findOrInsert(ctx, caller, cookie, id, agentSecret, admitted);
  if (outcome.kind === 'created') return { session: await launching!, reattached: false };
  const row = outcome.row.state === 'starting' ? await settled(ctx, outcome.row.id) : outcome.row;
  if (!row || row.state !== 'running') throw new HttpError(503, 'The session with this terminal_cookie failed to start; try again');
  return { session: row, reattached: true };
}

export function createSessionService(options: SessionServiceOptions) {
  const { backend, log } = options;
  const ctx: SessionContext = { options, store: createSessionStore(options.pool), closed: false, listeners: [] };
  const { store } = ctx;
  const reaper: ReaperRun = {};
  // The browser's first attach, prepared during the start (attach-ahead.ts): its agent stream, or the authorization.
  const attachAhead = createAttachAhead<Prepared>({
    dispose: (prepared) => {
      if ('stream' in prepared) prepared.stream.socket.destroy();
    },
  });

  /**
   * The browser attaches next: its agent stream (or, when the recorder reads users' streams, which are opened
   * differently, its authorization with the agent) is made meanwhile, from the moment the agent is ready, while the
   * start records that and answers (attach-ahead.ts). An agent that answered the challenge it was started with
   * (local backend) needs no `POST /challenge`: its answer is checked here just the same.
   */
  ctx.agentReady = (agent, credentials: AgentCredentials, challenge: SignedChallenge) => {
    const { address, answer } = agent;
    attachAhead.prepare(credentials.sessionId, address, async () => {
      const authorization = answer ? authorizationFrom(address, credentials, challenge.nonce, answer, 'GET', '/attach') : undefined;
      if (options.streamAhead) return { stream: await openAgentStream(address, credentials, undefined, authorization) };
      return { authorization: authorization ?? (await authorizeAttach(address, credentials)) };
    });
  };
  ctx.agentReleased = (sessionId) => attachAhead.forget(sessionId);

  backend.onAgentExit?.((id, code) => {
    if (!ctx.closed) void markExited(ctx, id, code).catch((error: unknown) => log.warn({ err: error, session: id }, 'could not record an agent exit'));
  });

  return {
    store,
    secretOf: (row: SessionRow) => secretOf(ctx, row),

    /** The terminal stream of a running session's agent, once the backend and the agent vouch for the address (the recorder's). */
    async connect(row: SessionRow & { agent_address: string }, options?: StreamOptions) {
      await backend.verifyAddress?.({ id: row.id, resource: row.agent_resource, address: row.agent_address });
      return connectAgent(row.agent_address, credentialsOf(ctx, row), options);
    },

    /**
     * A user's stream as a plain socket after the upgrade, for the relay that passes frames on undecoded
     * (ws/proxy.ts): the one opened during the start when there is one, else a new one.
     */
    async openStream(row: SessionRow & { agent_address: string }, streamOptions?: StreamOptions): Promise<AgentStream> {
      const ahead = attachAhead.take(row.id, row.agent_address);
      await backend.verifyAddress?.({ id: row.id, resource: row.agent_resource, address: row.agent_address });
      const prepared = await ahead;
      if (prepared && 'stream' in prepared) {
        if (!streamOptions && !prepared.stream.socket.destroyed) return prepared.stream;
        prepared.stream.socket.destroy();
      }
      const authorization = prepared && 'authorization' in prepared ? prepared.authorization : undefined;
      return openAgentStream(row.agent_address, credentialsOf(ctx, row), streamOptions, authorization);
    },

    /** Called when a session this replica started begins running, and when any replica's action ends one. */
    onChange(listener: (change: SessionChange) => void): void {
      ctx.listeners.push(listener);
    },

    /** Why the backend won't run shells for this user (or this session's shell for them), or undefined. */
    refusal: (caller: { role: string }, session?: { resource: string | null }) => backend.refusal?.(caller, session),

    /** Stops every live session of a user (disabled or deleted account). */
    async stopAllOf(ownerId: string, reason: ExitReason = 'stopped'): Promise<number> {
      const live = await store.list({ ownerId, includeEnded: false });
      await Promise.all(live.map((row) => stopSession(ctx, row.id, reason)));
      return live.length;
    },

    start: (caller: Caller, cookie: string): Promise<{ session: SessionRow; reattached: boolean }> => startSession(ctx, caller, cookie),

    list: (caller: Caller, includeEnded: boolean) => store.list({ ownerId: caller.role === 'admin' ? undefined : caller.id, includeEnded }),

    /** The session if the caller may see it (owner; admins: any), else null: unknown and foreign look the same. */
    async visible(caller: Caller, id: string): Promise<SessionRow | null> {
      const row = await store.get(id);
      if (!row || (row.owner_id !== caller.id && caller.role !== 'admin')) return null;
      return row;
    },

    stop: (id: string, reason: ExitReason = 'stopped') => stopSession(ctx, id, reason),
    markExited: (id: string, exitCode: number | null, reason: 'exited' | 'lost' = 'exited') => markExited(ctx, id, exitCode, reason),
    settled: (id: string) => settled(ctx, id),
    reapOnce: () => reapOnce(ctx),
    startReaper: (): void => startReaper(ctx, reaper),

    async close(): Promise<void> {
      ctx.closed = true;
      await stopReaper(reaper);
    },
  };
}

export type SessionService = ReturnType<typeof createSessionService>;
