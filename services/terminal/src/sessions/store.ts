// SQL of the session records. States: starting -> running -> (stopping ->) stopped | exited; starting -> failed.
import { fileURLToPath } from 'node:url';
import type { MigrationSource } from '@boxyard/kit';
import { sql, type CommonQueryMethods, type DatabasePool } from 'slonik';
import { z } from 'zod';

export const sessionMigrations: MigrationSource = {
  namespace: 'terminal',
  dir: fileURLToPath(new URL('./migrations', import.meta.url)),
};

export const LIVE_STATES = ['starting', 'running'] as const;

export const sessionRow = z.object({
  id: z.string(),
  owner_id: z.string(),
  owner_username: z.string(),
  /** The owner's current role. */
  owner_role: z.string(),
  /** `<issuer>#<subject>` when the owner is an identity provider's user (its username was the provider's to choose). */
  owner_provider_identity: z.string().nullable(),
  terminal_cookie: z.string(),
  backend: z.enum(['local', 'kubernetes']),
  state: z.enum(['starting', 'running', 'stopping', 'exited', 'stopped', 'failed']),
  agent_address: z.string().nullable(),
  agent_resource: z.string().nullable(),
  agent_secret: z.string(),
  exit_code: z.number().nullable(),
  end_reason: z.string().nullable(),
  created_at: z.number(),
  last_activity_at: z.number(),
  expires_at: z.number(),
  ended_at: z.number().nullable(),
});
export type SessionRow = z.output<typeof sessionRow>;

const columns = sql.fragment`
  s.id, s.owner_id, u.username as owner_username, u.role as owner_role,
  (select i.issuer || '#' || i.subject from oidc_identities i where i.user_id = s.owner_id order by i.created_at limit 1) as owner_provider_identity,
  s.terminal_cookie, s.backend, s.state, s.agent_address,
  s.agent_resource, s.agent_secret, s.exit_code, s.end_reason, s.created_at, s.last_activity_at, s.expires_at,
  s.ended_at`;

/** A statement on terminal_sessions `s` returning its rows, re-selected with the owner's name. */
const returning = (statement: ReturnType<typeof sql.fragment>) => sql.type(sessionRow)`
  with changed as (${statement} returning *)
  select ${columns} from changed s join users u on u.id = s.owner_id`;

const countsRow = z.object({
  /** The caller's live session of this terminal_cookie, if any (then the start returns it: findLive). */
  live_id: z.string().nullable(),
  mine: z.number(),
  mine_soonest: z.number().nullable(),
  total: z.number(),
  total_soonest: z.number().nullable(),
  provider_identity: z.string().nullable(),
});

const SESSION_ID = /^[\da-f]{8}-[\da-f]{4}-[\da-f]{4}-[\da-f]{4}-[\da-f]{12}$/i;
/** Session ids are UUIDs; anything else names no session. */
export const isSessionId = (id: string): boolean => SESSION_ID.test(id);

export function createSessionStore(pool: DatabasePool) {
  return {
    /** Null for an id that is no session's, a malformed one included (the seed's 404 "session does not exist"). */
    get: async (id: string) =>
      !isSessionId(id)
        ? null
        : pool.maybeOne(sql.type(sessionRow)`select ${columns} from terminal_sessions s join users u on u.id = s.owner_id where s.id = ${id}::uuid`),

    list: (filter: { ownerId?: string | undefined; includeEnded: boolean }) =>
      pool.any(sql.type(sessionRow)`
        select ${columns} from terminal_sessions s join users u on u.id = s.owner_id
        where ${filter.ownerId ? sql.fragment`s.owner_id = ${filter.ownerId}::uuid` : sql.fragment`true`}
          and ${filter.includeEnded ? sql.fragment`true` : sql.fragment`s.state in ('starting', 'running', 'stopping')`}
        order by s.created_at desc
        limit 1000`),

    /** Inside the start transaction: the live session for this cookie, if any. */
    findLive: (tx: CommonQueryMethods, ownerId: string, cookie: string) =>
      tx.maybeOne(sql.type(sessionRow)`
        select ${columns} from terminal_sessions s join users u on u.id = s.owner_id
        where s.owner_id = ${ownerId}::uuid and s.terminal_cookie = ${cookie} and s.state in ('starting', 'running')`),

    /**
     * Live sessions of one owner and of everyone, each with the soonest of their absolute expiries, the owner's
     * identity-provider name (the row's owner_provider_identity), and the id of the owner's live session of this
     * cookie: what a start decides on, in one statement (one scan of the live sessions, one round trip).
     */
    countLive: (tx: CommonQueryMethods, ownerId: string, cookie: string) =>
      tx.one(sql.type(countsRow)`
        select (array_agg(id::text) filter (where owner_id = ${ownerId}::uuid and terminal_cookie = ${cookie}))[1] as live_id,
          count(*) filter (where owner_id = ${ownerId}::uuid)::int as mine,
          (extract(epoch from min(expires_at) filter (where owner_id = ${ownerId}::uuid)) * 1000)::float8 as mine_soonest,
          count(*)::int as total, (extract(epoch from min(expires_at)) * 1000)::float8 as total_soonest,
          (select i.issuer || '#' || i.subject from oidc_identities i where i.user_id = ${ownerId}::uuid order by i.created_at limit 1) as provider_identity
        from terminal_sessions
        where state in ('starting', 'running')`),

    /** `expiresAt`: ms since the epoch, the same the session's agent is given. */
    insert: (tx: CommonQueryMethods, row: { id: string; ownerId: string; cookie: string; backend: string; sealedSecret: string; expiresAt: number }) =>
      tx.one(
        returning(sql.fragment`
        insert into terminal_sessions as s (id, owner_id, terminal_cookie, backend, agent_secret, expires_at)
        values (${row.id}::uuid, ${row.ownerId}::uuid, ${row.cookie}, ${row.backend}, ${row.sealedSecret},
                to_timestamp(${row.expiresAt} / 1000.0))`),
      ),

    markRunning: (id: string, agent: { address: string; resource: string }) =>
      pool.maybeOne(
        returning(sql.fragment`
        update terminal_sessions as s set state = 'running', agent_address = ${agent.address}, agent_resource = ${agent.resource},
          last_activity_at = now(), updated_at = now()
        where id = ${id}::uuid and state = 'starting'`),
      ),

    setResource: (id: string, resource: string) =>
      pool.query(sql.unsafe`update terminal_sessions set agent_resource = ${resource}, updated_at = now() where id = ${id}::uuid and agent_resource is null`),

    markFailed: (id: string, reason: string) =>
      pool.maybeOne(
        returning(sql.fragment`
        update terminal_sessions as s set state = 'failed', end_reason = ${reason}, ended_at = now(), updated_at = now()
        where id = ${id}::uuid and state = 'starting'`),
      ),

    /** Claims a live session for stopping; only one caller (replica, reaper) wins. */
    claimStop: (id: string, reason: string) =>
      pool.maybeOne(
        returning(sql.fragment`
        update terminal_sessions as s set state = 'stopping', end_reason = ${reason}, updated_at = now(),
          next_check_at = now() + interval '1 minute'
        where id = ${id}::uuid and state in ('starting', 'running')`),
      ),

    markStopped: (id: string) =>
      pool.maybeOne(
        returning(sql.fragment`
        update terminal_sessions as s set state = 'stopped', ended_at = now(), updated_at = now()
        where id = ${id}::uuid and state = 'stopping'`),
      ),

    /** The shell ended on its own (or its agent vanished: reason `lost`). */
    markExited: (id: string, exitCode: number | null, reason: string) =>
      pool.maybeOne(
        returning(sql.fragment`
        update terminal_sessions as s set state = 'exited', exit_code = ${exitCode}, end_reason = ${reason},
          ended_at = now(), updated_at = now()
        where id = ${id}::uuid and state = 'running'`),
      ),

    recordExitCode: (id: string, exitCode: number) =>
      pool.query(
        sql.unsafe`update terminal_sessions set exit_code = coalesce(exit_code, ${exitCode}) where id = ${id}::uuid and state in ('stopping', 'stopped')`,
      ),

    touch: (id: string, lastActivityAt: number) =>
      pool.query(sql.unsafe`
        update terminal_sessions set last_activity_at = to_timestamp(${lastActivityAt} / 1000.0)
        where id = ${id}::uuid and last_activity_at < to_timestamp(${lastActivityAt} / 1000.0) - interval '1 second'`),

    /** Asks the reaper to look at this session on its next round. */
    checkSoon: (id: string) => pool.query(sql.unsafe`update terminal_sessions set next_check_at = now() where id = ${id}::uuid`),

    /** The reaper's share of due sessions: rows other replicas hold are skipped, claimed rows move their next check. */
    claimDue: (intervalSeconds: number, limit: number) =>
      pool.any(
        returning(sql.fragment`
        update terminal_sessions as s set next_check_at = now() + make_interval(secs => ${intervalSeconds})
        where id in (
          select id from terminal_sessions
          where state in ('starting', 'running', 'stopping') and next_check_at <= now()
          order by next_check_at limit ${limit} for update skip locked)`),
      ),

    purgeEnded: (retentionHours: number) =>
      pool.query(sql.unsafe`delete from terminal_sessions where ended_at < now() - make_interval(hours => ${retentionHours})`),
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
