// The terminal gateway's own part, inside the host (kit service/host.ts gives it the pool, accounts and provider
// accounts): the session backend (local agents or Kubernetes pods), sessions and the reaper, the terminal
// WebSocket, REST (auth, users, sessions) and the browser page.
import websocket from '@fastify/websocket';
import { createAccountWatch, createOriginPolicy, createSessionTokens, ignoreError, refuseCrossSiteWrites } from '@boxyard/kit';
import { hostedSignInOptions, oidcSignIn, oidcSignInMethod } from '@boxyard/kit/oidc-sign-in/index.ts';
import type { PluginOptions } from '@boxyard/kit/service/contract.ts';
import type { FastifyInstance } from 'fastify';
import { createObjectStore } from '@boxyard/kit';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { auditRoutes } from './audit/routes.ts';
import { createAuditService, type AuditService } from './audit/service.ts';
import { createAuth, installAuth, type Auth } from './auth/plugin.ts';
import { createRecordingService, type RecordingService } from './recording/service.ts';
import { recordingRoutes } from './recording/routes.ts';
import { authRoutes } from './auth/routes.ts';
import { createKubernetesBackend } from './backends/kubernetes.ts';
import { createLocalBackend } from './backends/local.ts';
import type { SessionBackend } from './backends/types.ts';
import type { TerminalConfig } from './config.ts';
import { ok } from './http/envelope.ts';
import { createSecretBox } from './sessions/agent-secret.ts';
import { createSessionMetrics } from './sessions/metrics.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { createSessionService, type SessionService } from './sessions/service.ts';
import { userAdministrationRoutes, userRoutes } from './users/routes.ts';
import { webRoutes } from './web/routes.ts';
import { createAccessWatch } from './ws/access-watch.ts';
import type { Relay } from './ws/proxy.ts';
import { socketRoutes } from './ws/routes.ts';

const MAX_FRAME = 1_048_576;
const HEARTBEAT_MS = 30_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** The gateway's sessions and the backend that runs their shells (tests drive them). */
    terminal: { sessions: SessionService; backend: SessionBackend; recordings: RecordingService; audit: AuditService };
  }
}

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || host.startsWith('127.');

export async function terminalPlugin(app: FastifyInstance, { config, publicUrl }: PluginOptions<TerminalConfig>): Promise<void> {
  const { sessions, recordings, audit } = startSessions(app, config);
  const relays = new Set<Relay>();
  await app.register(websocket, {
    options: { maxPayload: MAX_FRAME, perMessageDeflate: false },
    // On shutdown, tell clients to come back (1001) rather than that their shell ended: it didn't.
    preClose(done) {
      for (const client of app.websocketServer.clients) client.close(1001, 'gateway restarting');
      for (const relay of relays) relay.close(1001, 'gateway restarting');
      app.websocketServer.close(() => done());
    },
  });
  await installAuth(app);
  const auth = createAuth({
    accounts: app.accounts,
    tokens: createSessionTokens({
      secrets: [config.session.secret, ...config.session.previous_secrets],
      issuer: config.session.issuer,
      audience: config.session.audience,
      typ: 'boxyard-terminal-session+jwt',
      ttlSeconds: config.session.ttl_seconds,
    }),
    ttlSeconds: config.session.ttl_seconds,
    provider: app.providerAccounts,
  });
  const origins = createOriginPolicy({ allowed: config.allowed_origins, publicUrl: config.server.public_url });
  // Cookies are SameSite=Strict already; a foreign Origin on a state-changing request is refused as well.
  refuseCrossSiteWrites(app, origins);

  const signIn = config.auth.sign_in.enabled ? oidcSignInMethod(config.auth) : undefined;
  authRoutes(app, { auth, accounts: app.accounts, signIn });
  if (signIn) await app.register(oidcSignIn, providerSignIn(app, config, publicUrl, auth));
  const access = await watchAccess(app, config, sessions);
  userRoutes(app, { auth, accounts: app.accounts, sessions });
  userAdministrationRoutes(app, { auth, accounts: app.accounts, sessions });
  sessionRoutes(app, { auth, sessions, audit });
  socketRoutes(app, {
    auth,
    origins,
    sessions,
    heartbeatMs: HEARTBEAT_MS,
    access,
    maxSocketsPerUser: config.sessions.max_sockets_per_user,
    maxSockets: config.sessions.max_sockets,
    recordings,
    audit,
    relays,
  });
  recordingRoutes(app, { auth, recordings });
  auditRoutes(app, { auth, audit });
  await webRoutes(app);
  if (!config.server.tls.enabled && !isLoopback(config.server.host) && !config.server.public_url?.startsWith('https:')) {
    app.log.warn(
      'terminal: serving plain HTTP beyond loopback: browsers only keep the Secure auth_token cookie over HTTPS (enable server.tls or put a TLS proxy in front and set server.public_url)',
    );
  }
}

/** The backend and the sessions on it; sessions end before the app closes, the backend after. */
function startSessions(app: FastifyInstance, config: TerminalConfig) {
  const log = { info: (m: string) => app.log.info(m), warn: (m: string) => app.log.warn(m) };
  const backend =
    config.backend.kind === 'kubernetes'
      ? createKubernetesBackend({ config: config.backend.kubernetes!, sessions: config.sessions, log })
      : createLocalBackend({
          shell: config.backend.local.shell,
          socketDir: config.backend.local.socket_dir,
          accounts: config.backend.local.accounts,
          warmAgents: config.backend.local.warm_agents,
          sandbox: config.backend.local.sandbox,
          stateDir: config.state_dir,
          log,
        });
  app.addHook('onClose', () => backend.close());
  const sessions = createSessionService({
    pool: app.pool,
    backend,
    sessions: config.sessions,
    secretBox: createSecretBox([config.session.secret, ...config.session.previous_secrets]),
    log: app.log,
    metrics: createSessionMetrics(app.metrics, app.pool, backend.kind, config.metrics.database_cache_seconds),
    startTimeoutSeconds: config.backend.kind === 'kubernetes' ? config.backend.kubernetes!.pod_ready_timeout_seconds : 15,
    // With recording on, a user's stream is opened for the recorder too (recording/service.ts `stream`).
    streamAhead: config.recording.mode === 'off',
  });
  const { recordings, audit } = startHistory(app, config, sessions);
  // Before the WebSocket plugin's own preClose (registered after this): sessions detach, then clients hear 1001.
  app.addHook('preClose', async () => {
    await sessions.close();
    await recordings.close();
    await audit.settle();
  });
  app.addHook('onListen', () => {
    sessions.startReaper();
    recordings.startSweeper();
  });
  app.decorate('terminal', { sessions, backend, recordings, audit });
  return { sessions, backend, recordings, audit };
}

/** Recordings (when recording.mode is not off) and the audit log; both follow every session's start and end. */
function startHistory(app: FastifyInstance, config: TerminalConfig, sessions: SessionService) {
  const storage = config.storage ?? { driver: 'local' as const, root: join(config.state_dir ?? join(tmpdir(), 'boxyard-terminal'), 'recordings') };
  if (!config.storage && config.recording.mode !== 'off')
    app.log.warn(`terminal: recording to ${join(config.state_dir ?? tmpdir(), 'recordings')} on local disk (no storage configured)`);
  const audit = createAuditService({ pool: app.pool, metrics: app.metrics, log: app.log, retentionDays: config.recording.retention_days });
  const recordings = createRecordingService({
    pool: app.pool,
    objects: createObjectStore(storage),
    config: config.recording,
    sessions,
    shell: config.backend.kind === 'kubernetes' ? config.backend.kubernetes!.shell : config.backend.local.shell,
    log: app.log,
    metrics: app.metrics,
    sweep: () => audit.sweepOnce(),
  });
  const EXPIRY = new Set(['idle_timeout', 'lifetime', 'reattach_grace']);
  sessions.onChange((change) => {
    if (change.kind === 'running') return void recordings.record(change.row);
    void recordings.sessionEnded(change.row.id).catch(ignoreError('the lease sweep finishes a recording whose session end was missed'));
    // Stops through the API are audited with their caller (sessions/routes.ts); the others here.
    if (change.reason === 'stopped') return;
    audit.record({
      event: EXPIRY.has(change.reason) ? 'expiry' : 'stop',
      userId: change.row.owner_id,
      username: change.row.owner_username,
      sessionId: change.row.id,
      address: null,
      userAgent: null,
      resource: change.row.agent_resource,
      detail: { reason: change.reason, exit_code: change.row.exit_code },
    });
  });
  return { recordings, audit };
}

/**
 * Attached sockets keep only the access they still have: sign-outs and account changes from any replica arrive
 * through PostgreSQL notifications; every socket is re-checked periodically as well.
 */
async function watchAccess(app: FastifyInstance, config: TerminalConfig, sessions: SessionService) {
  const access = createAccessWatch({
    accounts: app.accounts,
    refusal: (user, session) => sessions.refusal(user, session),
    recheckMs: config.sessions.access_recheck_seconds * 1000,
    log: app.log,
  });
  const accountWatch = createAccountWatch({ databaseUrl: config.database.url, schema: config.database.schema, log: app.log });
  accountWatch.subscribe((change) => access.onChange(change));
  app.addHook('onClose', async () => {
    access.close();
    await accountWatch.close();
  });
  await accountWatch.start();
  return access;
}

/** Provider sign-in ends in the same session cookie as a password; signing out revokes it the same way. */
function providerSignIn(app: FastifyInstance, config: TerminalConfig, publicUrl: string, auth: Auth) {
  return {
    ...hostedSignInOptions(app, 'terminal', config, publicUrl),
    ok,
    session: {
      start: (reply: Parameters<Auth['signIn']>[0], user: Parameters<Auth['signIn']>[1]) => auth.signIn(reply, user),
      async end(request: Parameters<Auth['resolveUser']>[0], reply: Parameters<Auth['signOut']>[0]) {
        const user = await auth.resolveUser(request);
        if (user) await app.accounts.revokeSession(user.jti, user.expiresAt);
        auth.signOut(reply);
        return user?.jti;
      },
    },
  };
}
