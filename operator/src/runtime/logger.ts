// The operator's logger: pino, as every Boxyard service logs — JSON lines in a pod (what log pipelines parse), a
// readable line per record on a terminal. Reconcile records carry the fields controller-runtime's do (controller,
// namespace, name, reconcileID), so one query finds every line of one reconcile, whichever operator wrote it.
import { hostname } from 'node:os';
import { terminalLogStream } from '@boxyard/kit';
import { pino, type Logger } from 'pino';

export type { Logger };

export interface OperatorLoggerOptions {
  level?: string;
  /** Where lines go (tests); default stdout, as JSON unless stdout is a terminal (BOXYARD_LOG_FORMAT overrides). */
  stream?: NodeJS.WritableStream;
}

export function createOperatorLogger(options: OperatorLoggerOptions = {}): Logger {
  const stream = options.stream ?? terminalLogStream('operator');
  // `logger`, not pino's `name`: a reconcile record's `name` is the object's, as in controller-runtime.
  const settings = {
    base: { pid: process.pid, hostname: hostname(), logger: 'boxyard-operator' },
    level: options.level ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return stream ? pino(settings, stream) : pino(settings);
}

/** The fields of one reconcile's records. */
export function reconcileFields(controller: string, key: string, reconcileID: string): Record<string, string> {
  const slash = key.indexOf('/');
  return { controller, namespace: key.slice(0, slash), name: key.slice(slash + 1), reconcileID };
}
