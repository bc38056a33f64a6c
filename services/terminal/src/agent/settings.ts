// What an agent is told at start, through BOXYARD_AGENT_* environment variables (the same in a session pod and
// under the local backend). Nothing here lets anyone attach: the agent gets the gateway's public key to check the
// gateway with, and an agent key that proves it is the session's agent (agent/handshake.ts). The agent key lets its
// holder pose as the agent, so the agent's environment must stay out of its shell's reach (see
// BOXYARD_AGENT_DROP_TO and BOXYARD_AGENT_PRIVATE_ENVIRONMENT).
// Checked by hand rather than with zod: every session runs an agent, and zod alone adds ~18 MB to its RSS.

export const DEFAULT_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

export type AgentListen = { path: string } | { host: string; port: number };

export interface AgentSettings {
  BOXYARD_AGENT_SESSION_ID: string;
  BOXYARD_AGENT_LISTEN: AgentListen;
  /** Proves to the gateway that this is the session's agent (base64url, 32 bytes). */
  BOXYARD_AGENT_KEY: string;
  /** The gateway's Ed25519 public key for this session (base64url, 32 bytes): checks every call. */
  BOXYARD_AGENT_GATEWAY_KEY: string;
  /**
   * `uid:gid` the agent switches to as it starts, before its shell exists (a session pod's agent starts as root with
   * only CAP_SETUID and CAP_SETGID). The kernel marks a process that changed its uid not dumpable: the shell, of
   * that same uid, can then read neither /proc/<agent>/environ nor the agent's memory.
   */
  BOXYARD_AGENT_DROP_TO: { uid: number; gid: number } | undefined;
  /**
   * Refuse to start when the shell could read this process's environment (/proc/<pid>/environ: the agent key, the
   * OTEL_* settings): set in session pods, where shell and agent have one uid.
   */
  BOXYARD_AGENT_PRIVATE_ENVIRONMENT: boolean;
  BOXYARD_AGENT_SHELL: string;
  BOXYARD_AGENT_SCROLLBACK_BYTES: number;
  BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: number;
  BOXYARD_AGENT_REATTACH_GRACE_SECONDS: number;
  /** Absolute end of the session, epoch milliseconds. */
  BOXYARD_AGENT_EXPIRES_AT: number;
  /** Switch the shell to this account (only when the agent runs as root). */
  BOXYARD_AGENT_RUN_AS: string | undefined;
  /**
   * The sandbox the shell runs in (local backend, server that cannot switch users): the bubblewrap command and its
   * arguments, a JSON array the gateway wrote (backends/local-sandbox.ts); the shell is appended after `--`.
   */
  BOXYARD_AGENT_SANDBOX: string[] | undefined;
  /** The shell's home inside the sandbox, and its USER. */
  BOXYARD_AGENT_SANDBOX_HOME: string | undefined;
  BOXYARD_AGENT_SANDBOX_USER: string | undefined;
  BOXYARD_AGENT_LANG: string;
  BOXYARD_AGENT_PATH: string | undefined;
  /** The shell's home: a mounted volume that outlives the pod (a session pod with a persistent home). */
  BOXYARD_AGENT_HOME: string | undefined;
  BOXYARD_AGENT_COLS: number;
  BOXYARD_AGENT_ROWS: number;
  /**
   * The gateway's signed challenge (its nonce, and `<ms>.<signature>`), given at start by a backend that reads the
   * agent's stdout (the local one): the agent prints its answer beside its address, so the gateway's first attach
   * needs no `POST /challenge` (handshake.ts). Not secret: it proves nothing without the gateway's key.
   */
  BOXYARD_AGENT_CHALLENGE: string | undefined;
  BOXYARD_AGENT_CHALLENGE_SIGNATURE: string | undefined;
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
  const flag = (name: keyof AgentSettings): boolean => {
    const value = env[name] ?? 'false';
    if (value !== 'true' && value !== 'false') problems.push(`${name}: must be true or false`);
    return value === 'true';
  };
  const dropTo = (): AgentSettings['BOXYARD_AGENT_DROP_TO'] => {
    const value = env.BOXYARD_AGENT_DROP_TO;
    if (!value) return undefined;
    const match = /^([0-9]{1,10}):([0-9]{1,10})$/.exec(value);
    const [uid, gid] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
    if (uid < 1 || gid < 1 || uid > 4_294_967_294 || gid > 4_294_967_294) problems.push('BOXYARD_AGENT_DROP_TO: must be <uid>:<gid>, neither of them 0');
    return { uid, gid };
  };
  const sandbox = (): string[] | undefined => {
    const value = env.BOXYARD_AGENT_SANDBOX;
    if (!value) return undefined;
    let parsed: unknown;
    try {
      parsed = JSON.parse(value);
    } catch {
      parsed = undefined;
    }
    const valid =
      Array.isArray(parsed) &&
      parsed.length >= 1 &&
      parsed.length <= 512 &&
      parsed.every((a) => typeof a === 'string' && a.length > 0 && a.length <= 4096 && !a.includes('\0'));
    if (!valid) problems.push('BOXYARD_AGENT_SANDBOX: must be a JSON array of 1 to 512 non-empty strings');
    return valid ? (parsed as string[]) : undefined;
  };
  const listenText = text('BOXYARD_AGENT_LISTEN');
  const listen = parseListen(listenText);
  if (listenText && !listen) problems.push('BOXYARD_AGENT_LISTEN: must be unix:/absolute/path or host:port');
  const settings: AgentSettings = {
    BOXYARD_AGENT_SESSION_ID: text('BOXYARD_AGENT_SESSION_ID'),
    BOXYARD_AGENT_LISTEN: listen ?? { path: '' },
    BOXYARD_AGENT_KEY: text('BOXYARD_AGENT_KEY', undefined, /^[A-Za-z0-9_-]{43}$/),
    BOXYARD_AGENT_GATEWAY_KEY: text('BOXYARD_AGENT_GATEWAY_KEY', undefined, /^[A-Za-z0-9_-]{43}$/),
    BOXYARD_AGENT_DROP_TO: dropTo(),
    BOXYARD_AGENT_PRIVATE_ENVIRONMENT: flag('BOXYARD_AGENT_PRIVATE_ENVIRONMENT'),
    BOXYARD_AGENT_SHELL: text('BOXYARD_AGENT_SHELL', '/bin/bash'),
    BOXYARD_AGENT_SCROLLBACK_BYTES: int('BOXYARD_AGENT_SCROLLBACK_BYTES', 1024, 64 * 1_048_576, 1_048_576),
    BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS: int('BOXYARD_AGENT_IDLE_TIMEOUT_SECONDS', 1, YEARS_10, 1800),
    BOXYARD_AGENT_REATTACH_GRACE_SECONDS: int('BOXYARD_AGENT_REATTACH_GRACE_SECONDS', 1, YEARS_10, 300),
    BOXYARD_AGENT_EXPIRES_AT: int('BOXYARD_AGENT_EXPIRES_AT', 0, Number.MAX_SAFE_INTEGER),
    BOXYARD_AGENT_RUN_AS: env.BOXYARD_AGENT_RUN_AS || undefined,
    BOXYARD_AGENT_SANDBOX: sandbox(),
    BOXYARD_AGENT_SANDBOX_HOME: env.BOXYARD_AGENT_SANDBOX
      ? text('BOXYARD_AGENT_SANDBOX_HOME', undefined, /^\/home\/[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}$/)
      : undefined,
    BOXYARD_AGENT_SANDBOX_USER: env.BOXYARD_AGENT_SANDBOX ? text('BOXYARD_AGENT_SANDBOX_USER', undefined, /^[A-Za-z0-9_.-]{1,64}$/) : undefined,
    BOXYARD_AGENT_LANG: text('BOXYARD_AGENT_LANG', 'C.UTF-8', /^[A-Za-z0-9_.@-]+$/),
    BOXYARD_AGENT_PATH: env.BOXYARD_AGENT_PATH || undefined,
    BOXYARD_AGENT_HOME: env.BOXYARD_AGENT_HOME ? text('BOXYARD_AGENT_HOME', undefined, /^\/[A-Za-z0-9._/-]{0,4095}$/) : undefined,
    BOXYARD_AGENT_COLS: int('BOXYARD_AGENT_COLS', 1, 1000, 80),
    BOXYARD_AGENT_ROWS: int('BOXYARD_AGENT_ROWS', 1, 1000, 24),
    BOXYARD_AGENT_CHALLENGE: env.BOXYARD_AGENT_CHALLENGE ? text('BOXYARD_AGENT_CHALLENGE', undefined, /^[A-Za-z0-9_-]{43}$/) : undefined,
    BOXYARD_AGENT_CHALLENGE_SIGNATURE: env.BOXYARD_AGENT_CHALLENGE
      ? text('BOXYARD_AGENT_CHALLENGE_SIGNATURE', undefined, /^\d{13}\.[A-Za-z0-9_-]{86}$/)
      : undefined,
  };
  if (problems.length > 0) throw new Error(`terminal agent: bad settings: ${problems.join('; ')}`);
  return settings;
}
