// A dependency that is away (PostgreSQL restarting, storage unwritable) is the server's condition, not a bug and
// not the caller's mistake: 503 with Retry-After in the service's error shape, so clients and proxies retry, and
// the request is logged as a warning rather than an unhandled error.
import { BackendTerminatedError, BackendTerminatedUnexpectedlyError, ConnectionError } from 'slonik';
import { StorageUnavailableError } from '../storage/errors.ts';
import { HttpError } from './http-error.ts';

/** Seconds a client should wait: about what a supervised PostgreSQL needs to come back. */
export const RETRY_AFTER_SECONDS = 5;

/** Socket errors of a database connection that is gone or refused. */
const CONNECTION_ERROR_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** SQLSTATEs of a server that is shutting down, starting or full: class 08 (connection exception) and these. */
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
/** pg's own messages for a connection that died under a query (no code is set on these). */
const LOST_CONNECTION = /^Connection terminated( unexpectedly)?$|^Client has encountered a connection error/;

function* causes(error: unknown): Generator<unknown> {
  for (let current = error, depth = 0; current && depth < 8; depth++) {
    yield current;
    current = (current as { cause?: unknown }).cause;
  }
}

export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of causes(error)) {
    if (e instanceof ConnectionError || e instanceof BackendTerminatedError || e instanceof BackendTerminatedUnexpectedlyError) return true;
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (CONNECTION_ERROR_CODES.has(code) || UNAVAILABLE_SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
    if (typeof message === 'string' && LOST_CONNECTION.test(message)) return true;
  }
  return false;
}

const retryLater = { 'Retry-After': String(RETRY_AFTER_SECONDS) };

/**
 * The 503 for a dependency failure, or undefined when `error` is something else. The message names the
 * dependency, never its address or path.
 */
export function unavailableError(error: unknown): HttpError | undefined {
  if (error instanceof StorageUnavailableError) return new HttpError(503, 'Storage is unavailable; try again shortly', { headers: retryLater });
  if (isDatabaseUnavailable(error)) return new HttpError(503, 'The database is unavailable; try again shortly', { headers: retryLater });
  return undefined;
}
