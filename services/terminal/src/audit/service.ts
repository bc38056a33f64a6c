// The audit log as the rest of the gateway uses it: record an event (never in the way of the terminal: a failed
// insert is logged and counted, not thrown), with the caller's address and user agent taken from their request.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { Counter, type Registry } from '@prometheus-io/client';
import type { DatabasePool } from 'slonik';
import { createAuditStore, type AuditEntry, type AuditEventName } from './store.ts';

const MAX_USER_AGENT = 512;

export interface Who {
  userId: string | null;
  username: string | null;
  address: string | null;
  userAgent: string | null;
}

/** The caller of a request: user (when signed in), address (as the proxy trust settings resolve it), user agent. */
export function whoOf(request: FastifyRequest): Who {
  const user = request.user as { id: string; username: string } | null | undefined;
  const agent = request.headers['user-agent'];
  return {
    userId: user?.id ?? null,
    username: user?.username ?? null,
    address: request.ip ?? null,
    userAgent: typeof agent === 'string' ? agent.slice(0, MAX_USER_AGENT) : null,
  };
}

export function createAuditService(options: { pool: DatabasePool; metrics: Registry; log: FastifyBaseLogger; retentionDays: number }) {
  const store = createAuditStore(options.pool);
  const events = new Counter({
    name: 'boxyard_terminal_audit_events_total',
    help: 'Terminal audit events recorded by this gateway, by event.',
    labelNames: ['event'],
    registers: [options.metrics],
  });
  const failures = new Counter({
    name: 'boxyard_terminal_audit_failures_total',
    help: 'Terminal audit events that could not be written.',
    registers: [options.metrics],
  });
  const pending = new Set<Promise<unknown>>();
  // One insert at a time, in the order the events happened: two inserts on two pooled connections may commit the
  // other way round, and the log is read in id order (a resize then a detach was listed as detach, resize).
  let last: Promise<unknown> = Promise.resolve();

  const record = (entry: AuditEntry): void => {
    events.inc({ event: entry.event });
    const write = last.then(() =>
      store.insert(entry).catch((error: unknown) => {
        failures.inc();
        options.log.warn({ err: error, event: entry.event, session: entry.sessionId }, 'could not write an audit event');
      }),
    );
    last = write;
    pending.add(write);
    void write.finally(() => pending.delete(write));
  };

  return {
    store,
    record,
    /** An event caused by a request (start, stop, attach, ...). */
    fromRequest(request: FastifyRequest, event: AuditEventName, session: { id: string; agent_resource: string | null }, detail?: Record<string, unknown>) {
      record({ event, ...whoOf(request), sessionId: session.id, resource: session.agent_resource, ...(detail ? { detail } : {}) });
    },
    sweepOnce: () => store.sweep(options.retentionDays),
    /** Waits for the writes in flight (shutdown, tests). */
    settle: () => Promise.all([...pending]),
  };
}

export type AuditService = ReturnType<typeof createAuditService>;
