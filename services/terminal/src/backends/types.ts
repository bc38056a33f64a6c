// Where agents run. The gateway only ever talks to an agent through its address; a backend starts agents,
// tells whether one still exists, and releases what a session held.
import type { ChallengeAnswer, SignedChallenge } from '../agent/handshake.ts';

export interface AgentSpec {
  sessionId: string;
  ownerId: string;
  /** The owner's username (the local backend's account mapping is by username). */
  ownerName: string;
  /**
   * `<issuer>#<subject>` when the owner is an identity provider's user: the provider chose its username, so the
   * account mapping never goes by that name (only by `oidc:<issuer>#<subject>`).
   */
  ownerProviderIdentity?: string | undefined;
  /** The owner's role when the session starts (a local server that cannot switch users sandboxes non-admins). */
  ownerRole?: string | undefined;
  /** Proves the agent is the session's (agent/handshake.ts); must stay out of reach of the session's shell. */
  agentKey: string;
  /** The gateway's public key for this session: how the agent checks the gateway. */
  gatewayPublicKey: string;
  /** Epoch ms: the absolute end of the session. */
  expiresAt: number;
  idleTimeoutSeconds: number;
  reattachGraceSeconds: number;
  scrollbackBytes: number;
  /**
   * The gateway's signed challenge (agent/handshake.ts), for a backend that can hand it to the agent through a
   * channel only the two share (the local agent's stdin): the agent's answer then comes back the same way, and the
   * first attach needs no challenge of its own. Ignored by a backend without such a channel.
   */
  challenge?: SignedChallenge | undefined;
}

export interface StartedAgent {
  /** `unix:/path` or `host:port`. */
  address: string;
  /** What release() needs: `pid:<n>` or `pod/<name> uid:<pod uid>`. */
  resource: string;
  /** The agent's answer to `AgentSpec.challenge` (as it would answer `POST /challenge`), when it came with the start. */
  answer?: ChallengeAnswer | undefined;
}

export type BackendProbe = { state: 'present' } | { state: 'gone'; exitCode: number | null };

export interface SessionBackend {
  readonly kind: 'local' | 'kubernetes';
  /**
   * Why this backend won't run shells for a user of this role, or undefined. The local backend refuses
   * non-admins when it cannot give each user an OS account of their own nor a sandbox (their shell would be the
   * server's); given the session, also a shell that runs as the server for an owner who is no longer an admin.
   */
  refusal?(user: { role: string }, session?: { resource: string | null }): string | undefined;
  /**
   * Starts an agent and resolves once it accepts connections. `onResource` is told the resource name as soon as
   * it exists, so a start that fails half-way can still be cleaned up.
   */
  start(spec: AgentSpec, onResource?: (resource: string) => void): Promise<StartedAgent>;
  /** Releases the session's process or pod (and files). Idempotent; resolves when it is gone or going. */
  release(session: { id: string; resource: string | null; address: string | null }): Promise<void>;
  /**
   * Throws when what is at the session's address is no longer what was started for it (a session pod's IP given to
   * another pod). Called before attaching; the agent's own proof (handshake.ts) is checked on every call anyway.
   */
  verifyAddress?(session: { id: string; resource: string | null; address: string }): Promise<void>;
  /** Whether the session's process or pod still exists, and its exit status when known. */
  probe(session: { id: string; resource: string | null }): Promise<BackendProbe>;
  /** Called when an agent this replica started exits (local backend only: it sees its children end). */
  onAgentExit?(listener: (sessionId: string, exitCode: number | null) => void): void;
  /** Pids of the spare agents started ahead of time and waiting for a session (local backend only). */
  warmAgents?(): number[];
  close(): Promise<void>;
}
