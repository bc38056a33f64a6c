// Where log lines go: JSON for machines (a pod's log, systemd's journal, a pipe, a file), one readable line per
// record for a person at a terminal, so `make run`'s banner is not buried in JSON. BOXYARD_LOG_FORMAT overrides.
import pinoPretty from 'pino-pretty';

export type LogFormat = 'json' | 'pretty';

export class LogFormatError extends Error {}

/** `json` or `pretty` as asked by BOXYARD_LOG_FORMAT; unset: pretty when stdout is a terminal. */
export function logFormat(env: NodeJS.ProcessEnv = process.env, stdout: { isTTY?: boolean } = process.stdout): LogFormat {
  const asked = env.BOXYARD_LOG_FORMAT;
  if (asked === 'json' || asked === 'pretty') return asked;
  if (asked !== undefined && asked !== '') {
    throw new LogFormatError(
      `BOXYARD_LOG_FORMAT must be "json" or "pretty" (or unset: readable lines on a terminal, JSON otherwise), not ${JSON.stringify(asked.slice(0, 40))}`,
    );
  }
  return stdout.isTTY ? 'pretty' : 'json';
}

/**
 * One line per record: time, level, who logged it (`label`, e.g. the service in a `make run` process holding three),
 * the message, then the record's other fields as compact JSON. Synchronous, so lines keep their order with the
 * banner that console.log prints.
 */
export function prettyLogStream(label?: string, destination?: NodeJS.WritableStream): NodeJS.WritableStream {
  return pinoPretty({
    ...(destination ? { destination, colorize: false } : { colorize: process.stdout.hasColors?.() ?? false }),
    translateTime: 'SYS:HH:MM:ss.l',
    ignore: 'pid,hostname',
    singleLine: true,
    sync: true,
    ...(label ? { messageFormat: (log: Record<string, unknown>, messageKey: string) => `${label}: ${String(log[messageKey] ?? '')}` } : {}),
  });
}

/** The stream a logger of this process writes to: undefined means pino's own JSON to stdout. */
export function terminalLogStream(label?: string): NodeJS.WritableStream | undefined {
  return logFormat() === 'pretty' ? prettyLogStream(label) : undefined;
}
