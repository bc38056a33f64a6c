// WS /ws/terminal/{sessionId}. Everything is checked before the upgrade, so a refused client gets a plain
// HTTP status: 403 for a foreign Origin, 401 without a valid session cookie, 403 when the backend refuses the
// caller (see SessionBackend.refusal), 404 for a session that doesn't exist or isn't the caller's (admins
// included: only the owner may attach to a shell). Once attached, the access watch closes the socket when that
// authorisation ends (sign-out, expiry, account disabled or deleted, rights lost): 4401 / 4403.
import { createStreamLimits, endUpgradeSpan, forbidden, markHandled, notFound } from '@boxyard/kit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import { AUTH_COOKIE, type Auth } from '../auth/plugin.ts';
import type { OriginPolicy } from '@boxyard/kit';
import type { AuditService } from '../audit/service.ts';
import type { RecordingService } from '../recording/service.ts';
import { CLOSE_CODES, closeCodeFor, encodeServerMessage, EXIT_REASONS, type ExitReason } from '../protocol.ts';
import type { SessionService } from '../sessions/service.ts';
import type { SessionRow } from '../sessions/store.ts';
import type { AccessWatch } from './access-watch.ts';
import type { AgentStream } from '../agent/client.ts';
import { proxyTerminal, type Ending, type Relay } from './proxy.ts';

declare module 'fastify' {
  interface FastifyRequest {
    terminalSession: SessionRow | null;
  }
}

export interface SocketRouteOptions {
  auth: Auth;
  origins: OriginPolicy;
  sessions: SessionService;
  heartbeatMs: number;
  access: AccessWatch;
  /** Attached sockets per user and in all on this replica (sessions.max_sockets*). */
  maxSocketsPerUser: number;
  maxSockets: number;
  recordings?: RecordingService;
  audit?: AuditService;
  /** The relayed connections, for the gateway's shutdown (1001). */
  relays?: Set<Relay>;
}

/** At most one resize a second per socket reaches the audit log (a dragged window sends dozens). */
const RESIZE_AUDIT_MS = 1000;

const ENDED = new Set(['exited', 'stopped', 'failed']);

function endingOf(row: SessionRow): Ending {
  const reason: ExitReason = (EXIT_REASONS as readonly string[]).includes(row.end_reason ?? '')
    ? (row.end_reason as ExitReason)
    : row.state === 'exited'
      ? 'exited'
      : 'stopped';
  return {
    message: { type: 'exit', code: row.exit_code, signal: null, reason },
    code: closeCodeFor(reason, row.exit_code),
    reason,
  };
}

export function socketRoutes(app: FastifyInstance, options: SocketRouteOptions): void {
  const { auth, origins, sessions } = options;
  app.decorateRequest('terminalSession', null);

  // The caller and the session are looked up at once (an attach waits for one database round trip, not two); the
  // session is only looked at once the caller is known, so an unauthenticated caller still learns nothing.
  const userAndOwnSession = async (request: FastifyRequest<{ Params: { sessionId: string } }>) => {
    // Only for a caller who brings a credential: one without is refused before anything is read.
    const credential = request.cookies[AUTH_COOKIE] !== undefined || request.headers.authorization !== undefined;
    const lookup = credential ? sessions.store.get(request.params.sessionId) : undefined;
    if (lookup) markHandled(lookup);
    await auth.requireUser(request);
    const refusal = sessions.refusal(request.user!);
    if (refusal) throw forbidden(refusal);
    const row = await lookup;
    if (!row || row.owner_id !== request.user!.id) throw notFound('Session does not exist');
    const sessionRefusal = sessions.refusal(request.user!, { resource: row.agent_resource });
    if (sessionRefusal) throw forbidden(sessionRefusal);
    request.terminalSession = row;
  };

  // Last before the upgrade: a refused client gets a plain 429/503; the slot is held as long as the connection.
  const limits = createStreamLimits({ what: 'terminal sockets', perHolder: options.maxSocketsPerUser, total: options.maxSockets });
  const claimSocketSlot = async (request: FastifyRequest) => {
    const release = limits.claim(`user:${request.user!.id}`);
    request.raw.socket.once('close', release);
  };

  app.get<{ Params: { sessionId: string } }>(
    '/ws/terminal/:sessionId',
    {
      websocket: true,
      // A malformed id is no session's: 404 from userAndOwnSession, as for an unknown one.
      schema: { params: { type: 'object', required: ['sessionId'], properties: { sessionId: { type: 'string' } } } },
      preHandler: [origins.check, userAndOwnSession, claimSocketSlot],
    },
    async (socket: WebSocket, request) => {
      endUpgradeSpan(request);
      // Hold the client's input (in the kernel's buffers) until the agent's socket is open: nothing typed early is lost.
      socket.pause();
      let row = request.terminalSession!;
      const end = (ending: Ending) => {
        socket.resume();
        socket.send(encodeServerMessage(ending.message));
        socket.close(ending.code, ending.reason);
      };
      // A second tab may attach while the first start is still bringing the agent up.
      if (row.state === 'starting') row = (await sessions.settled(row.id)) ?? row;
      if (ENDED.has(row.state) || row.state === 'stopping') return end(endingOf(row));
      if (!row.agent_address)
        return end({ message: { type: 'error', message: 'The session is not ready' }, code: CLOSE_CODES.agentUnavailable, reason: 'not ready' });

      const user = request.user!;
      // Until the relay takes the socket over, ws owns it; then the relay does (proxy.ts).
      const attached: { relay?: Relay } = {};
      let closed = false;
      const unwatch = options.access.register({
        jti: user.jti,
        userId: user.id,
        expiresAt: user.expiresAt,
        resource: row.agent_resource,
        end: (ending) => {
          const message = { type: 'error' as const, message: ending.message };
          if (attached.relay) return attached.relay.end({ message, code: ending.code, reason: ending.reason });
          if (socket.readyState !== socket.OPEN) return;
          socket.send(encodeServerMessage(message));
          socket.close(ending.code, ending.reason);
        },
      });
      const whenClosed = (also?: (code: number) => void) => (code: number) => {
        if (closed) return;
        closed = true;
        unwatch();
        if (attached.relay) options.relays?.delete(attached.relay);
        also?.(code);
      };
      socket.once('close', whenClosed());

      const id = row.id;
      const lost = async ({ wasOpen, error }: { wasOpen: boolean; error: Error | undefined }): Promise<Ending> => {
        request.log.warn({ session: id, err: error }, wasOpen ? 'lost the agent connection' : 'agent unreachable');
        // Ended meanwhile (stopped by another replica, pod gone)? Then the client hears how it ended.
        await sessions.store.checkSoon(id);
        const current = await sessions.store.get(id);
        if (current && (ENDED.has(current.state) || current.state === 'stopping')) return endingOf(current);
        return {
          message: { type: 'error', message: wasOpen ? 'Lost the connection to the terminal' : 'The terminal is not reachable right now' },
          code: CLOSE_CODES.agentUnavailable,
          reason: wasOpen ? 'agent connection lost' : 'agent unreachable',
        };
      };
      let upstream: AgentStream;
      try {
        // Only once the address is still the session's and the agent there has proven it is the session's agent.
        // With recording on, the recorder reads this same stream (recording/feed.ts): no second stream from the agent.
        upstream = await sessions.openStream({ ...row, agent_address: row.agent_address }, options.recordings?.stream);
      } catch (error) {
        const ending = await lost({ wasOpen: false, error: error as Error }).catch(
          (): Ending => ({
            message: { type: 'error', message: 'The terminal is not reachable right now' },
            code: CLOSE_CODES.agentUnavailable,
            reason: 'agent unreachable',
          }),
        );
        if (socket.readyState === socket.OPEN) end(ending);
        return;
      }
      if (socket.readyState !== socket.OPEN) {
        upstream.socket.destroy(); // the client left while the agent was being checked
        return;
      }
      const { audit, recordings } = options;
      // A recorded session says so before anything else; a recording no gateway writes (its writer died) is taken over.
      if (recordings?.notice) {
        socket.send(encodeServerMessage({ type: 'notice', message: recordings.notice }));
        void recordings.record(row);
      }
      audit?.fromRequest(request, 'attach', row);
      let lastResize = 0;
      // The relay owns the socket from here: ws no longer reads it, so it is no longer ws's client either.
      app.websocketServer.clients.delete(socket);
      const relay = proxyTerminal(socket, upstream, {
        heartbeatMs: options.heartbeatMs,
        onResize: (cols, rows) => {
          if (!audit || Date.now() - lastResize < RESIZE_AUDIT_MS) return;
          lastResize = Date.now();
          audit.fromRequest(request, 'resize', row, { cols, rows });
        },
        onExit: (message) => {
          if (message.reason === 'exited')
            void sessions.markExited(id, message.code).catch((error: unknown) => request.log.warn({ err: error }, 'could not record the exit'));
        },
        onUpstreamLost: lost,
        onClosed: whenClosed((code) => audit?.fromRequest(request, 'detach', row, { close_code: code })),
        tap: recordings?.stream ? recordings.tap(id) : undefined,
      });
      attached.relay = relay;
      options.relays?.add(relay);
    },
  );
}
