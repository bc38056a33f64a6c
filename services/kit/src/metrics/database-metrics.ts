// Database failures a service sees, as a Prometheus counter by reason: connection (PostgreSQL unreachable or the
// pool exhausted), timeout (statement timeout), constraint (integrity violations: mostly callers' conflicts,
// kept apart so they don't drown the rest) and query (anything else).
import { Counter, type Registry } from '@prometheus-io/client';
import { BackendTerminatedError, ConnectionError, IntegrityConstraintViolationError, StatementTimeoutError, type Interceptor } from 'slonik';

export type DatabaseErrorReason = 'connection' | 'timeout' | 'constraint' | 'query';

export function databaseErrorReason(error: unknown): DatabaseErrorReason {
  if (error instanceof ConnectionError || error instanceof BackendTerminatedError) return 'connection';
  if (error instanceof StatementTimeoutError) return 'timeout';
  if (error instanceof IntegrityConstraintViolationError) return 'constraint';
  const code = (error as { code?: string; cause?: { code?: string } } | undefined)?.cause?.code ?? (error as { code?: string } | undefined)?.code;
  if (code && /^(08|57P0|53300|ECONN|ETIMEDOUT|EHOSTUNREACH)/.test(code)) return 'connection';
  return 'query';
}

/** A slonik interceptor counting failed queries into `registry` (boxyard_database_errors_total{reason}). */
export function databaseErrorInterceptor(registry: Registry): Interceptor {
  const errors = new Counter({
    name: 'boxyard_database_errors_total',
    help: 'Database queries that failed, by reason (connection, timeout, constraint, query).',
    labelNames: ['reason'],
    registers: [registry],
  });
  for (const reason of ['connection', 'timeout', 'constraint', 'query'] as const) errors.inc({ reason }, 0);
  return {
    name: 'boxyard-database-errors',
    queryExecutionError: (_context, _query, error) => {
      errors.inc({ reason: databaseErrorReason(error) });
      return null;
    },
  };
}
