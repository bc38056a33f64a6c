// Assembles the file share: migrations, PostgreSQL pool, object store, accounts and the first admin, the kit's
// app (envelope errors, health, metrics, /api-docs), rate limit, event fan-out, the sweeper, and the routes.
import { fileURLToPath } from 'node:url';
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import {
  accountMigrations,
  createAccountWatch,
  createAccounts,
  createApp,
  createDatabasePool,
  createObjectStore,
  createMetricsRegistry,
  instrumentStore,
  createOriginPolicy,
  createProviderAccounts,
  createSessionTokens,
  installRateLimit,
  migrate,
  pingDatabase,
  rateLimitMigrations,
  refuseCrossSiteWrites,
  resourceServerMigrations,
  serverTls, publicBaseUrl, documentStatuses,
  type DatabasePool,
  type ObjectStore,
  listenMetrics,
  metricsListenOptions,
} from '@boxyard/kit';
import { oidcSignIn, oidcSignInMethod, oidcSignInMigrations } from '@boxyard/kit/oidc-sign-in/index.ts';
import type { FastifyInstance } from 'fastify';
import { apiKeyRoutes } from './auth/api-key-routes.ts';
import { createApiKeyStore } from './auth/api-key-store.ts';
import { authRoutes, endSession, startSession } from './auth/auth-routes.ts';
import { createAuthenticator } from './auth/authenticate.ts';
import { createSessionCookiePolicy } from './auth/session-cookie.ts';
import type { Principal } from './auth/principal.ts';
import { DEFAULT_METRICS_PORT, SERVICE_NAME, type FileShareConfig } from './config.ts';
import { createEventBus, type EventBus } from './events/event-bus.ts';
import { eventRoutes } from './events/event-routes.ts';
import { ok } from './http/envelope.ts';
import { fileRoutes } from './files/file-routes.ts';
import { assetRoutes } from './console/assets.ts';
import { consoleRoutes, signInRoutes } from './console/console-routes.ts';
import { createSweeper, type Sweeper } from './maintenance/sweeper.ts';
import { createTree, pickCaseFoldCollation } from './tree/tree-store.ts';

export const FILE_SHARE_VERSION = '0.1.0';

export const fileShareMigrations = { namespace: 'file-share', dir: fileURLToPath(new URL('./migrations', import.meta.url)) };
/** Every migration source, in the order they apply (backup restores exactly these). */
export const migrationSources = [accountMigrations, oidcSignInMigrations, resourceServerMigrations, rateLimitMigrations, fileShareMigrations];

export interface FileShare {
  app: FastifyInstance;
  pool: DatabasePool;
  store: ObjectStore;
  bus: EventBus;
  sweeper: Sweeper;
  /** The generated password of the first admin, when this start created it (print it once). */
  generatedAdminPassword: string | undefined;
}

export interface BuildOptions {
  /** Reconnection delay suggested to SSE clients (tests shorten it). */
  sseRetryMs?: number;
  /** Sweeper period (tests shorten it). */
  sweepIntervalMs?: number;
}

export const publicUrlOf = (config: FileShareConfig, port = config.server.port) => publicBaseUrl(config.server, port);

export async function buildFileShare(config: FileShareConfig, options: BuildOptions & { port?: number } = {}): Promise<FileShare> {
  const schema = config.database.schema;
  await migrate(config.database.url, schema, migrationSources);
  // Made first so the pool and the store count into the app's /metrics.
  const metrics = createMetricsRegistry({ service: SERVICE_NAME });
  const pool = await createDatabasePool({ url: config.database.url, schema, poolSize: config.database.pool_size, metrics });
  const closers: (() => Promise<unknown>)[] = [() => pool.end()];
  try {
    const store = instrumentStore(createObjectStore(config.storage), metrics, { bucket: config.storage.driver === 's3' ? config.storage.bucket : undefined });
    const accounts = createAccounts(pool);
    const admin = await accounts.ensureAdmin({ username: config.admin.username, password: config.admin.password });
    const sessions = createSessionTokens({
      secrets: [config.session.secret, ...config.session.previous_secrets],
      issuer: config.session.issuer,
      audience: config.session.audience,
      typ: 'boxyard-file-share-session+jwt',
      ttlSeconds: config.session.ttl_seconds,
    });
    const keys = createApiKeyStore(pool);
    const tree = createTree(pool, { eventChannel: `file_share_events_${schema}`, caseFoldCollation: await pickCaseFoldCollation(pool) });

    const tls = await serverTls(config.server, config.state_dir);
    const app = await createApp({
      service: SERVICE_NAME,
      version: FILE_SHARE_VERSION,
      errorShape: 'envelope',
      metrics,
      logLevel: config.logging.level,
      https: tls,
      trustProxy: config.server.trust_proxy,
      bodyLimit: config.server.body_limit_bytes,
      timeouts: config.server.timeouts,
      readiness: { postgres: () => pingDatabase(pool), storage: () => store.check() },
      openapi: {
        title: 'Boxyard file share',
        description:
          'A web file server with an API: listings for people and tools, downloads with Range, uploads with SHA-256, ' +
          'folders, rename, delete, search, API keys and live events. Authenticate with `Authorization: Bearer <API key>`, ' +
          'a session from POST /auth/login/basic (Bearer or the auth_token cookie), or HTTP Basic.',
        servers: [{ url: publicUrlOf(config, options.port) }],
      },
    });
    closers.unshift(() => app.close());
    // Tokens of the identity provider (auth.resource_server), when configured.
    const provider = createProviderAccounts(config.auth, { pool, publicUrl: publicUrlOf(config, options.port), log: app.log, nonceSecret: config.session.secret });
    if (provider) app.addHook('onClose', () => provider.close());
    const authenticator = createAuthenticator({ accounts, sessions, keys, publicRead: config.public_read, provider, groupMapping: config.group_mapping });

    const bus = createEventBus({ pool, databaseUrl: config.database.url, channel: `file_share_events_${schema}`, log: app.log });
    await bus.start();
    closers.unshift(() => bus.close());
    // Sign-outs, account and key changes (any replica) reach open event streams at once.
    const changes = createAccountWatch({ databaseUrl: config.database.url, schema, log: app.log });
    await changes.start();
    closers.unshift(() => changes.close());
    const sweeper = createSweeper({ pool, store, retentionHours: config.events.retention_hours, abandonedAfterSeconds: config.uploads.abandoned_after_seconds, log: app.log, intervalMs: options.sweepIntervalMs ?? 60_000 });
    sweeper.start();
    closers.unshift(() => sweeper.close());
    // Streams end before the pool does.
    app.addHook('onClose', async () => {
      await changes.close();
      await bus.close();
      await sweeper.close();
    });

    await app.register(cookie);
    await app.register(multipart, {
      // Our limit is enforced while streaming (413, nothing stored); busboy's only one above it so it never
      // truncates a part silently.
      limits: { fileSize: config.uploads.max_bytes + 1, files: 5, fields: 20, parts: 40, fieldSize: 64 * 1024 },
      throwFileSizeLimit: false,
      // The filename exactly as sent (busboy would cut it to its last segment): our name rules refuse `../x`.
      preservePath: true,
    });
    if (config.rate_limiting.enabled) {
      await installRateLimit(app, { pool, max: config.rate_limiting.max_requests, windowSeconds: config.rate_limiting.window_seconds, onStoreError: config.rate_limiting.on_store_error, namespace: SERVICE_NAME });
    }
    app.decorateRequest('principal', null as unknown as Principal);
    // Cookies and cached Basic credentials ride along on any request a browser makes: a state-changing request
    // from another site's page is refused (cross-site request forgery), as in the terminal.
    refuseCrossSiteWrites(app, createOriginPolicy({ publicUrl: config.server.public_url }));

    // The web console's assets and sign-in form need no credentials (a stale one must not block signing in).
    const signIn = config.auth.sign_in.enabled ? oidcSignInMethod(config.auth) : undefined;
    const sessionCookie = createSessionCookiePolicy(config.server.public_url);
    const consoleOptions = { accounts, sessions, cookie: sessionCookie, keys, signIn: signIn ? { displayName: signIn.display_name } : undefined };
    await app.register(assetRoutes);
    await app.register(signInRoutes, consoleOptions);

    await app.register(async (scope) => {
      // Every route below reads credentials and permissions first.
      documentStatuses(scope, 'envelope', [401, 403]);
      scope.addHook('onRequest', async (request) => {
        request.principal = await authenticator.authenticate(request);
      });
      await scope.register(consoleRoutes, consoleOptions);
      await scope.register(authRoutes, { accounts, sessions, cookie: sessionCookie, publicRead: config.public_read, signIn });
      if (signIn) {
        // Provider sign-in ends in the same auth_token session as POST /auth/login/basic.
        await scope.register(oidcSignIn, {
          service: SERVICE_NAME,
          auth: config.auth,
          publicUrl: publicUrlOf(config, options.port),
          secret: config.session.secret,
          pool,
          ok,
          session: {
            start: (reply, user) => startSession(sessions, sessionCookie, reply, user),
            end: (request, reply) => endSession(accounts, sessionCookie, request, reply),
          },
        });
      }
      await scope.register(apiKeyRoutes, { pool, keys });
      await scope.register(eventRoutes, { bus, authenticator, changes, heartbeatSeconds: config.events.heartbeat_seconds, maxStreamsPerUser: config.events.max_streams_per_user, maxStreams: config.events.max_streams, ...(options.sseRetryMs ? { retryMs: options.sseRetryMs } : {}) });
      await scope.register(fileRoutes, {
        pool,
        store,
        tree,
        sweeper,
        maxUploadBytes: config.uploads.max_bytes,
        signIn: signIn ? { displayName: signIn.display_name } : undefined,
      });
    });
    await app.ready();
    return { app, pool, store, bus, sweeper, generatedAdminPassword: admin.password };
  } catch (error) {
    for (const close of closers) await close().catch(() => {});
    throw error;
  }
}

export interface RunningFileShare extends FileShare {
  url: string;
  /** /metrics, on its own listener (metrics.host:metrics.port). */
  metricsUrl: string;
  close(): Promise<void>;
}

/** Builds and listens; with port 0 the OS picks a port. Prints a generated admin password once. */
export async function startFileShare(config: FileShareConfig, options: BuildOptions = {}): Promise<RunningFileShare> {
  let port = config.server.port;
  if (port === 0) port = await (await import('@boxyard/kit/net/free-port.ts')).freePort();
  const share = await buildFileShare(config, { ...options, port });
  let metrics;
  try {
    await share.app.listen({ host: config.server.host, port });
    metrics = await listenMetrics(share.app.metrics, metricsListenOptions(config.metrics, config.server.port, DEFAULT_METRICS_PORT));
  } catch (error) {
    await share.app.close();
    await share.pool.end();
    throw error;
  }
  const metricsListener = metrics;
  const url = publicUrlOf(config, port);
  if (share.generatedAdminPassword) {
    console.log(
      `\n  file-share: created the first admin account\n    username: ${config.admin.username}\n    password: ${share.generatedAdminPassword}\n  (shown once; set admin.password or BOXYARD_ADMIN__PASSWORD to choose it)\n`,
    );
  }
  return {
    ...share,
    url,
    metricsUrl: metricsListener.url,
    async close() {
      await metricsListener.close();
      await share.app.close();
      await share.pool.end();
    },
  };
}
