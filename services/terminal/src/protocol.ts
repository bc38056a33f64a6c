// The WebSocket frame format, shared by the browser, the gateway and the agent (the gateway speaks the same
// protocol to the agent as the client speaks to the gateway, so the proxy only filters and forwards):
// - binary frames: terminal data, both directions (raw bytes, UTF-8 in practice);
// - text frames: one JSON control message each.
//   client -> server: {type:'resize', cols, rows} | {type:'ping'} | {type:'pong'}
//   server -> client: {type:'pong'} | {type:'ping'} | {type:'error', message} | {type:'notice', message} | {type:'exit', code, signal, reason}
// After `exit` the server closes the socket with closeCodeFor(reason, code) (see CLOSE_CODES).

export const MAX_COLS = 1000;
export const MAX_ROWS = 1000;

export type ClientMessage = { type: 'resize'; cols: number; rows: number } | { type: 'ping' } | { type: 'pong' };

/** Why a session ended. `exited`: the shell ended on its own; the others: the service ended it. */
export const EXIT_REASONS = ['exited', 'stopped', 'idle_timeout', 'lifetime', 'reattach_grace', 'lost', 'recording_failed'] as const;
export type ExitReason = (typeof EXIT_REASONS)[number];

export interface ExitMessage {
  type: 'exit';
  /** The shell's exit status (128 + signal number when a signal ended it); null when unknown. */
  code: number | null;
  signal: number | null;
  reason: ExitReason;
}

/** `notice`: something the user should know, e.g. that the session is recorded (sent when a socket attaches). */
export type ServerMessage = ExitMessage | { type: 'pong' } | { type: 'ping' } | { type: 'error'; message: string } | { type: 'notice'; message: string };

/** WebSocket close codes (RFC 6455 leaves 4000-4999 to applications). */
export const CLOSE_CODES = {
  /** 4000 + the shell's exit status (0-255): the shell exited. */
  exitBase: 4000,
  stopped: 4300,
  idle_timeout: 4301,
  lifetime: 4302,
  reattach_grace: 4303,
  /** The session's agent vanished (pod deleted, process killed) without reporting an exit. */
  lost: 4304,
  /** recording.mode is `required` and the session's recording could not be written: the session was ended. */
  recording_failed: 4305,
  /** The agent could not be reached right now; reconnecting may work. */
  agentUnavailable: 4500,
  /** No pong to the server's ping in time. */
  heartbeatTimeout: 4408,
  /** The credential the socket was opened with ended: signed out (any replica) or expired. Sign in, then reattach. */
  sessionEnded: 4401,
  /** The account was disabled or deleted, or may no longer use terminals here. */
  accessWithdrawn: 4403,
} as const;

export function closeCodeFor(reason: ExitReason, code: number | null): number {
  if (reason === 'exited') return CLOSE_CODES.exitBase + Math.min(255, Math.max(0, code ?? 255));
  return CLOSE_CODES[reason];
}

export type ParsedClientFrame = { ok: true; message: ClientMessage } | { ok: false; error: string };

const isSize = (value: unknown, max: number) => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= max;

/** Checked by hand (no zod): the agent parses these too, and every session runs an agent. */
export function parseClientControl(text: string): ParsedClientFrame {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, error: 'control messages are JSON text frames; terminal input goes in binary frames' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: 'a control message is a JSON object with a "type"' };
  const message = value as Record<string, unknown>;
  const keys = Object.keys(message).sort().join(',');
  switch (message.type) {
    case 'ping':
    case 'pong':
      return keys === 'type'
        ? { ok: true, message: { type: message.type } }
        : { ok: false, error: `invalid ${message.type} message: no members besides "type"` };
    case 'resize': {
      const problems = [];
      if (!isSize(message.cols, MAX_COLS)) problems.push(`cols must be an integer from 1 to ${MAX_COLS}`);
      if (!isSize(message.rows, MAX_ROWS)) problems.push(`rows must be an integer from 1 to ${MAX_ROWS}`);
      if (keys !== 'cols,rows,type') problems.push('members are type, cols and rows');
      if (problems.length > 0) return { ok: false, error: `invalid resize message: ${problems.join('; ')}` };
      return { ok: true, message: { type: 'resize', cols: message.cols as number, rows: message.rows as number } };
    }
    default:
      return { ok: false, error: `unknown message type ${JSON.stringify(String(message.type))}` };
  }
}

export const encodeServerMessage = (message: ServerMessage): string => JSON.stringify(message);
