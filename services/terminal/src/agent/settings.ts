// What an agent is told at start, through BOXYARD_AGENT_* environment variables (the same in a session pod and
// under the local backend). None of them is secret: the agent gets the SHA-256 of its attach secret, never the
// secret itself, so a pod spec or a process environment reveals nothing that lets anyone attach.
// Checked by hand rather than with zod: every session runs an agent, and zod alone adds ~18 MB to its RSS.

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export type AgentListen = { path: string } | { host: string; port: number };

export interface AgentSettings {
  BOXYARD_AGENT_SESSION_ID: string;
  BOXYARD_AGENT_LISTEN: AgentListen;
  BOXYARD_AGENT_SECRET_SHA256: string;
  BOXYARD_AGENT_SHELL: string;
  BOXYARD_AGENT_SCROLLBACK_BYTES: number;
  BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: number;
  BOXYARD_AGENT_REATTACH_GRACE_SECONDS: number;
  /** Absolute end of the session, epoch milliseconds. */
  BOXYARD_AGENT_EXPIRES_AT: number;
  /** Switch the shell to this account (only when the agent runs as root). */
  BOXYARD_AGENT_RUN_AS: string | undefined;
  BOXYARD_AGENT_LANG: string;
  BOXYARD_AGENT_PATH: string | undefined;
  BOXYARD_AGENT_COLS: number;
  BOXYARD_AGENT_ROWS: number;
}

/** The variables as the gateway (or a pod spec) writes them. */
export type AgentEnvironment = Partial<Record<keyof AgentSettings, string>>;

const YEARS_10 = 10 * 365 * 86_400;

export function parseListen(value: string): AgentListen | undefined {
  if (/^unix:\/.+/.test(value)) return { path: value.slice('unix:'.length) };
  const match = /^(\[[0-9a-f:.]+\]|[0-9a-z.-]+):([0-9]{1,5})$/i.exec(value);
  if (!match || Number(match[2]) > 65_535) return undefined;
  return { host: match[1]!.replace(/^\[|\]$/g, ''), port: Number(match[2]) };
}

export function parseAgentSettings(env: Record<string, string | undefined>): AgentSettings {
  const problems: string[] = [];
  const text = (name: keyof AgentSettings, fallback?: string, pattern?: RegExp): string => {
    const value = env[name] ?? fallback;
    if (value === undefined || value === '') problems.push(`${name}: required`);
    else if (pattern && !pattern.test(value)) problems.push(`${name}: invalid value`);
    return value ?? '';
  };
  const int = (name: keyof AgentSettings, min: number, max: number, fallback?: number): number => {
    const raw = env[name];
    const value = raw === undefined || raw === '' ? fallback : Number(raw);
    if (value === undefined || !Number.isInteger(value) || value < min || value > max) problems.push(`${name}: must be an integer from ${min} to ${max}`);
    return value ?? 0;
  };
  const listenText = text('BOXYARD_AGENT_LISTEN');
  const listen = parseListen(listenText);
  if (listenText && !listen) problems.push('BOXYARD_AGENT_LISTEN: must be unix:/absolute/path or host:port');
  const settings: AgentSettings = {
    BOXYARD_AGENT_SESSION_ID: text('BOXYARD_AGENT_SESSION_ID'),
    BOXYARD_AGENT_LISTEN: listen ?? { path: '' },
    BOXYARD_AGENT_SECRET_SHA256: text('BOXYARD_AGENT_SECRET_SHA256', undefined, /^[0-9a-f]{64}$/),
    BOXYARD_AGENT_SHELL: text('BOXYARD_AGENT_SHELL', '/bin/bash'),
    BOXYARD_AGENT_SCROLLBACK_BYTES: int('BOXYARD_AGENT_SCROLLBACK_BYTES', 1024, 64 * 1_048_576, 1_048_576),
    BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: int('BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS', 1, YEARS_10, 1800),
    BOXYARD_AGENT_REATTACH_GRACE_SECONDS: int('BOXYARD_AGENT_REATTACH_GRACE_SECONDS', 1, YEARS_10, 300),
    BOXYARD_AGENT_EXPIRES_AT: int('BOXYARD_AGENT_EXPIRES_AT', 0, Number.MAX_SAFE_INTEGER),
    BOXYARD_AGENT_RUN_AS: env.BOXYARD_AGENT_RUN_AS || undefined,
    BOXYARD_AGENT_LANG: text('BOXYARD_AGENT_LANG', 'C.UTF-8', /^[A-Za-z0-9_.@-]+$/),
    BOXYARD_AGENT_PATH: env.BOXYARD_AGENT_PATH || undefined,
    BOXYARD_AGENT_COLS: int('BOXYARD_AGENT_COLS', 1, 1000, 80),
    BOXYARD_AGENT_ROWS: int('BOXYARD_AGENT_ROWS', 1, 1000, 24),
  };
  if (problems.length > 0) throw new Error(`terminal agent: bad settings: ${problems.join('; ')}`);
  return settings;
}
