// When a session has run its course. Used by the gateway's reaper (with the current config) and by the agent
// itself as a backstop (with the limits it was started with), so an agent whose gateway is gone still ends.

export interface ActivityState {
  /** Epoch ms. */
  now: number;
  expiresAt: number;
  /** Last keystroke, resize or attach. */
  lastActivityAt: number;
  attached: number;
  /** When the last socket went away (or the session started with none); null while a socket is attached. */
  detachedSince: number | null;
}

export interface ExpiryLimits {
  idleTimeoutMs: number;
  reattachGraceMs: number;
}

export type ExpiryReason = 'lifetime' | 'idle_timeout' | 'reattach_grace';

export function expiryReason(state: ActivityState, limits: ExpiryLimits): ExpiryReason | null {
  if (state.now >= state.expiresAt) return 'lifetime';
  if (state.now - state.lastActivityAt >= limits.idleTimeoutMs) return 'idle_timeout';
  if (state.attached === 0 && state.detachedSince !== null && state.now - state.detachedSince >= limits.reattachGraceMs) return 'reattach_grace';
  return null;
}
