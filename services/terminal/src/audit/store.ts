// SQL of the audit log (migrations/0002_audit.sql): inserts, filtered pages newest first, and the retention sweep.
import { sql, type DatabasePool } from 'slonik';
import { z } from 'zod';

export const AUDIT_EVENTS = ['start', 'attach', 'detach', 'resize', 'stop', 'expiry'] as const;
export type AuditEventName = (typeof AUDIT_EVENTS)[number];

export const auditRow = z.object({
  id: z.coerce.number(),
  at: z.number(),
  event: z.enum(AUDIT_EVENTS),
  user_id: z.string().nullable(),
  username: z.string().nullable(),
  session_id: z.string(),
  address: z.string().nullable(),
  user_agent: z.string().nullable(),
  resource: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
});
export type AuditRow = z.output<typeof auditRow>;

export interface AuditEntry {
  event: AuditEventName;
  userId: string | null;
  username: string | null;
  sessionId: string;
  address: string | null;
  userAgent: string | null;
  resource: string | null;
  detail?: Record<string, unknown>;
}

export interface AuditFilter {
  userId?: string | undefined;
  username?: string | undefined;
  sessionId?: string | undefined;
  event?: AuditEventName | undefined;
  /** ms */
  since?: number | undefined;
  until?: number | undefined;
  /** Rows with a smaller id than this (the previous page's last). */
  before?: number | undefined;
  limit: number;
}

const where = (f: AuditFilter) => {
  const parts = [sql.fragment`true`];
  if (f.userId) parts.push(sql.fragment`user_id = ${f.userId}::uuid`);
  if (f.username) parts.push(sql.fragment`username = ${f.username}`);
  if (f.sessionId) parts.push(sql.fragment`session_id = ${f.sessionId}::uuid`);
  if (f.event) parts.push(sql.fragment`event = ${f.event}`);
  if (f.since !== undefined) parts.push(sql.fragment`at >= to_timestamp(${f.since / 1000})`);
  if (f.until !== undefined) parts.push(sql.fragment`at < to_timestamp(${f.until / 1000})`);
  if (f.before !== undefined) parts.push(sql.fragment`id < ${f.before}`);
  return sql.join(parts, sql.fragment` and `);
};

export function createAuditStore(pool: DatabasePool) {
  return {
    insert: (e: AuditEntry) =>
      pool.query(sql.unsafe`
        insert into terminal_audit (event, user_id, username, session_id, address, user_agent, resource, detail)
        values (${e.event}, ${e.userId}, ${e.username}, ${e.sessionId}::uuid, ${e.address}, ${e.userAgent}, ${e.resource}, ${sql.jsonb(JSON.parse(JSON.stringify(e.detail ?? {})) as Parameters<typeof sql.jsonb>[0])})`),

    /** Newest first. */
    page: (filter: AuditFilter) =>
      pool.any(sql.type(auditRow)`
        select id, at, event, user_id, username, session_id, address, user_agent, resource, detail
        from terminal_audit where ${where(filter)} order by id desc limit ${filter.limit}`),

    sweep: (retentionDays: number) => pool.query(sql.unsafe`delete from terminal_audit where at < now() - make_interval(days => ${retentionDays})`),
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;
