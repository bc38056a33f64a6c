// The terminal gateway: REST (auth, users, sessions), the terminal WebSocket, the browser page, and the reaper.
import websocket from '@fastify/websocket';
import {
  accountMigrations,
  createAccounts,
  createAccountWatch,
  createApp,
  createDatabasePool,
  createMetricsRegistry,
  createOriginPolicy,
  createProviderAccounts,
  createSessionTokens,
  installRateLimit,
  migrate,
  pingDatabase,
  rateLimitMigrations,
  refuseCrossSiteWrites,
  resourceServerMigrations,
  serverTls, publicBaseUrl,
  listenMetrics,
  metricsListenOptions,
  type MetricsListener,
} from '@boxyard/kit';
import { freePort } from '@boxyard/kit/net/free-port.ts';
import { oidcSignIn, oidcSignInMethod, oidcSignInMigrations } from '@boxyard/kit/oidc-sign-in/index.ts';
import type { FastifyInstance } from 'fastify';
import { authRoutes } from './auth/routes.ts';
import { createAuth, installAuth } from './auth/plugin.ts';
import { createKubernetesBackend } from './backends/kubernetes.ts';
import { createLocalBackend } from './backends/local.ts';
import type { SessionBackend } from './backends/types.ts';
import { DEFAULT_METRICS_PORT, type TerminalConfig } from './config.ts';
import { ok } from './http/envelope.ts';
import { createSecretBox } from './sessions/agent-secret.ts';
import { sessionRoutes } from './sessions/routes.ts';
import { createSessionService, type SessionService } from './sessions/service.ts';
import { createSessionMetrics } from './sessions/metrics.ts';
import { sessionMigrations } from './sessions/store.ts';
import { userAdministrationRoutes, userRoutes } from './users/routes.ts';
import { webRoutes } from './web/routes.ts';
import { createAccessWatch } from './ws/access-watch.ts';
import { socketRoutes } from './ws/routes.ts';

export const TERMINAL_VERSION = '0.1.0';
const MAX_FRAME = 1_048_576;
const HEARTBEAT_MS = 30_000;

export interface TerminalService {
  app: FastifyInstance;
  url: string;
  /** /metrics, on its own listener (metrics.host:metrics.port). */
  metricsUrl: string;
  sessions: SessionService;
  backend: SessionBackend;
  close(): Promise<void>;
}

export interface StartOptions {
  /** Where the generated admin password is printed (once); default stdout. */
  print?: (line: string) => void;
}

const isLoopback = (host: string) => host === 'localhost' || host === '::1' || host.startsWith('127.');

export const baseUrl = (config: TerminalConfig, port: number) => publicBaseUrl(config.server, port);

/** Every migration source, in the order they apply (backup restores exactly these). */
export const migrationSources = [accountMigrations, oidcSignInMigrations, resourceServerMigrations, rateLimitMigrations, sessionMigrations];

export async function startTerminal(config: TerminalConfig, options: StartOptions = {}): Promise<TerminalService> {
  const print = options.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  const schema = config.database.schema;
  await migrate(config.database.url, schema, migrationSources);
  // Made first so the pool counts into the app's /metrics.
  const metrics = createMetricsRegistry({ service: 'terminal' });
  const pool = await createDatabasePool({ url: config.database.url, schema, poolSize: config.database.pool_size, metrics });
  let backend: SessionBackend | undefined;
  let app: FastifyInstance | undefined;
  let metricsListener: MetricsListener | undefined;
  try {
    const accounts = createAccounts(pool);
    const admin = await accounts.ensureAdmin({ username: config.admin.username, password: config.admin.password });
    if (admin.password) {
      print(`terminal: created the admin account "${config.admin.username}" with the generated password: ${admin.password}`);
      print('terminal: (printed only this once; set admin.password or BOXYARD_ADMIN__PASSWORD to choose it)');
    }

    const port = config.server.port === 0 ? await freePort() : config.server.port;
    const url = baseUrl(config, port);
    const tls = await serverTls(config.server, config.state_dir);
    app = await createApp({
      service: 'terminal',
      version: TERMINAL_VERSION,
      errorShape: 'envelope',
      metrics,
      logLevel: config.logging.level,
      https: tls,
      trustProxy: config.server.trust_proxy,
      bodyLimit: config.server.body_limit_bytes,
      timeouts: config.server.timeouts,
      readiness: { postgres: () => pingDatabase(pool) },
      openapi: {
        title: 'Boxyard terminal',
        description: 'On-demand shell sessions: start, list and stop over REST; terminal I/O over the WebSocket at /ws/terminal/{sessionId} (frame format in the README).',
        servers: [{ url }],
      },
    });
    const log = app.log;

    const sessionSecrets = [config.session.secret, ...config.session.previous_secrets];
    backend =
      config.backend.kind === 'kubernetes'
        ? createKubernetesBackend({ config: config.backend.kubernetes!, sessions: config.sessions, log: { info: (m) => log.info(m), warn: (m) => log.warn(m) } })
        : createLocalBackend({ shell: config.backend.local.shell, socketDir: config.backend.local.socket_dir, accounts: config.backend.local.accounts, warmAgents: config.backend.local.warm_agents, log: { info: (m) => log.info(m), warn: (m) => log.warn(m) } });
    const sessions = createSessionService({
      pool,
      backend,
      sessions: config.sessions,
      secretBox: createSecretBox(sessionSecrets),
      log,
      metrics: createSessionMetrics(metrics, pool, backend.kind, config.metrics.database_cache_seconds),
      startTimeoutSeconds: config.backend.kind === 'kubernetes' ? config.backend.kubernetes!.pod_ready_timeout_seconds : 15,
    });

    await app.register(websocket, {
      options: { maxPayload: MAX_FRAME, perMessageDeflate: false },
      // On shutdown, tell clients to come back (1001) rather than that their shell ended: it didn't.
      preClose(done) {
        for (const client of app!.websocketServer.clients) client.close(1001, 'gateway restarting');
        app!.websocketServer.close(() => done());
      },
    });
    if (config.rate_limiting.enabled) {
      await installRateLimit(app, { pool, max: config.rate_limiting.max_requests, windowSeconds: config.rate_limiting.window_seconds, onStoreError: config.rate_limiting.on_store_error, namespace: 'terminal' });
    }
    await installAuth(app);
    // Tokens of the identity provider (auth.resource_server), when configured.
    const provider = createProviderAccounts(config.auth, { pool, publicUrl: url, log, nonceSecret: config.session.secret });
    if (provider) app.addHook('onClose', () => provider.close());
    const auth = createAuth({
      accounts,
      tokens: createSessionTokens({ secrets: sessionSecrets, issuer: config.session.issuer, audience: config.session.audience, typ: 'boxyard-terminal-session+jwt', ttlSeconds: config.session.ttl_seconds }),
      ttlSeconds: config.session.ttl_seconds,
      provider,
    });
    const origins = createOriginPolicy({ allowed: config.allowed_origins, publicUrl: config.server.public_url });
    // Cookies are SameSite=Strict already; a foreign Origin on a state-changing request is refused as well.
    refuseCrossSiteWrites(app, origins);

    const signIn = config.auth.sign_in.enabled ? oidcSignInMethod(config.auth) : undefined;
    authRoutes(app, { auth, accounts, signIn });
    if (signIn) {
      // Provider sign-in ends in the same session cookie as a password; signing out revokes it the same way.
      await app.register(oidcSignIn, {
        service: 'terminal',
        auth: config.auth,
        publicUrl: url,
        secret: config.session.secret,
        pool,
        ok,
        session: {
          start: (reply, user) => auth.signIn(reply, user),
          async end(request, reply) {
            const user = await auth.resolveUser(request);
            if (user) await accounts.revokeSession(user.jti, user.expiresAt);
            auth.signOut(reply);
            return user?.jti;
          },
        },
      });
    }
    // Attached sockets keep only the access they still have: sign-outs and account changes from any replica arrive
    // through PostgreSQL notifications; every socket is re-checked periodically as well.
    const access = createAccessWatch({
      accounts,
      refusal: (user) => sessions.refusal(user),
      recheckMs: config.sessions.access_recheck_seconds * 1000,
      log,
    });
    const accountWatch = createAccountWatch({ databaseUrl: config.database.url, schema, log });
    accountWatch.subscribe((change) => access.onChange(change));
    await accountWatch.start();
    app.addHook('onClose', async () => {
      access.close();
      await accountWatch.close();
    });
    userRoutes(app, { auth, accounts, sessions });
    userAdministrationRoutes(app, { auth, accounts, sessions });
    sessionRoutes(app, { auth, sessions });
    socketRoutes(app, { auth, origins, sessions, heartbeatMs: HEARTBEAT_MS, access, maxSocketsPerUser: config.sessions.max_sockets_per_user, maxSockets: config.sessions.max_sockets });
    await webRoutes(app);

    await app.listen({ host: config.server.host, port });
    metricsListener = await listenMetrics(app.metrics, metricsListenOptions(config.metrics, config.server.port, DEFAULT_METRICS_PORT));
    sessions.startReaper();
    if (!tls && !isLoopback(config.server.host) && !config.server.public_url?.startsWith('https:')) {
      log.warn('terminal: serving plain HTTP beyond loopback: browsers only keep the Secure auth_token cookie over HTTPS (enable server.tls or put a TLS proxy in front and set server.public_url)');
    }
    const running = app;
    const usedBackend = backend;
    const metricsServer = metricsListener;
    return {
      app: running,
      url,
      metricsUrl: metricsServer.url,
      sessions,
      backend: usedBackend,
      async close() {
        await metricsServer.close();
        await sessions.close();
        await running.close();
        await usedBackend.close();
        await pool.end();
      },
    };
  } catch (error) {
    await metricsListener?.close();
    await app?.close().catch(() => {});
    await backend?.close().catch(() => {});
    await pool.end();
    throw error;
  }
}
