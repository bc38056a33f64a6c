// The file share's own part, inside the host (kit service/host.ts gives it the pool, store, accounts and provider
// accounts): sessions and API keys, the folder tree, event fan-out and the sweeper, the web console, and the routes.
import cookie from '@fastify/cookie';
import multipart from '@fastify/multipart';
import {
  createAccountWatch,
  createOriginPolicy,
  createSessionTokens,
  documentStatuses,
  refuseCrossSiteWrites,
  setAccessPrincipal,
  type SessionTokens,
} from '@boxyard/kit';
import { hostedSignInOptions, oidcSignIn, oidcSignInMethod } from '@boxyard/kit/oidc-sign-in/index.ts';
import type { PluginOptions } from '@boxyard/kit/service/contract.ts';
import type { FastifyInstance } from 'fastify';
import { apiKeyRoutes } from './auth/api-key-routes.ts';
import { createApiKeyStore } from './auth/api-key-store.ts';
import { authRoutes, endSession, startSession } from './auth/auth-routes.ts';
import { createAuthenticator } from './auth/authenticate.ts';
import type { Principal } from './auth/principal.ts';
import { createSessionCookiePolicy } from './auth/session-cookie.ts';
import { SERVICE_NAME, type FileShareConfig } from './config.ts';
import { assetRoutes } from './console/asset-routes.ts';
import { consoleRoutes, signInRoutes } from './console/console-routes.ts';
import { createEventBus, type EventBus } from './events/event-bus.ts';
import { eventRoutes } from './events/routes.ts';
import { fileRoutes } from './files/file-routes.ts';
import { ok } from './http/envelope.ts';
import { createSweeper, type Sweeper } from './maintenance/sweeper.ts';
import { createShares } from './shares/index.ts';
import { resumableRoutes } from './resumable/tus-routes.ts';
import { principalWriteAccess } from './resumable/write-access.ts';
import { createTree, pickCaseFoldCollation } from './tree/tree-store.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The file share's event fan-out and sweeper (tests drive them). */
    fileShare: { bus: EventBus; sweeper: Sweeper };
  }
}

/** Test settings (startService's `extra`): shorter SSE reconnection and sweeper periods. */
export interface FileShareExtra {
  sseRetryMs?: number;
  sweepIntervalMs?: number;
}

export async function fileSharePlugin(app: FastifyInstance, { config, publicUrl, extra }: PluginOptions<FileShareConfig>): Promise<void> {
  const settings = extra as FileShareExtra;
  const { bus, sweeper, changes } = await startWorkers(app, config, settings);
  const sessions = createSessionTokens({
    secrets: [config.session.secret, ...config.session.previous_secrets],
    issuer: config.session.issuer,
    audience: config.session.audience,
    typ: 'boxyard-file-share-session+jwt',
    ttlSeconds: config.session.ttl_seconds,
  });
  const keys = createApiKeyStore(app.pool, { changes });
  const tree = createTree(app.pool, { eventChannel: `file_share_events_${config.database.schema}`, caseFoldCollation: await pickCaseFoldCollation(app.pool) });
  const authenticator = createAuthenticator({
    accounts: app.accounts,
    sessions,
    keys,
    publicRead: config.public_read,
    provider: app.providerAccounts,
    groupMapping: config.group_mapping,
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
  app.decorateRequest('principal', null as unknown as Principal);
  // Cookies and cached Basic credentials ride along on any request a browser makes: a state-changing request
  // from another site's page is refused (cross-site request forgery), as in the terminal.
  refuseCrossSiteWrites(app, createOriginPolicy({ publicUrl: config.server.public_url }));

  // The web console's assets and sign-in form need no credentials (a stale one must not block signing in).
  const signIn = config.auth.sign_in.enabled ? oidcSignInMethod(config.auth) : undefined;
  const sessionCookie = createSessionCookiePolicy(config.server.public_url);
  const consoleOptions = { accounts: app.accounts, sessions, cookie: sessionCookie, keys, signIn: signIn ? { displayName: signIn.display_name } : undefined };
  await app.register(assetRoutes);
  await app.register(signInRoutes, consoleOptions);
  // Share links and file requests: public pages here (a link's password is no account's), the API in the scope below.
  const shares = createShares(app, {
    pool: app.pool,
    store: app.store,
    tree,
    sweeper,
    config,
    publicUrl,
    secureCookies: (request) => sessionCookie.options(request).secure,
  });
  await app.register(shares.publicRoutes);
  const tusOptions = {
    pool: app.pool,
    store: app.store,
    tree,
    sweeper,
    maxBytes: config.uploads.max_bytes,
    expiresAfterSeconds: config.uploads.resumable.expires_after_seconds,
    maxAgeSeconds: Math.max(1, config.uploads.abandoned_after_seconds - 60),
    ...(settings.sweepIntervalMs ? { expireIntervalMs: settings.sweepIntervalMs, recheckIntervalMs: settings.sweepIntervalMs } : {}),
  };
  await app.register(shares.resumableRoutes, tusOptions);

  await app.register(async (scope) => {
    // Every route below reads credentials and permissions first.
    documentStatuses(scope, 'envelope', [401, 403]);
    scope.addHook('onRequest', async (request) => {
      request.principal = await authenticator.authenticate(request);
      // The access log's caller: the user, else how an outsider came in (a share link); anonymous: none.
      const { user, via } = request.principal;
      setAccessPrincipal(request, user ? user.username : via === 'anonymous' ? null : via);
    });
    await scope.register(consoleRoutes, consoleOptions);
    await scope.register(authRoutes, { accounts: app.accounts, sessions, cookie: sessionCookie, publicRead: config.public_read, signIn });
    if (signIn) await scope.register(oidcSignIn, providerSignIn(app, config, publicUrl, sessions, sessionCookie));
    await scope.register(apiKeyRoutes, { pool: app.pool, keys });
    await scope.register(shares.apiRoutes);
    await scope.register(eventRoutes, {
      bus,
      authenticator,
      changes,
      heartbeatSeconds: config.events.heartbeat_seconds,
      maxStreamsPerUser: config.events.max_streams_per_user,
      maxStreams: config.events.max_streams,
      ...(settings.sseRetryMs ? { retryMs: settings.sseRetryMs } : {}),
    });
    await scope.register(fileRoutes, {
      pool: app.pool,
      store: app.store,
      tree,
      sweeper,
      maxUploadBytes: config.uploads.max_bytes,
      signIn: signIn ? { displayName: signIn.display_name } : undefined,
    });
    await scope.register(resumableRoutes, { ...tusOptions, writeAccess: (request) => principalWriteAccess(request.principal, config.uploads.max_bytes) });
  });
}

/** Event fan-out, the account watch and the sweeper; their streams end before the pool does. */
async function startWorkers(app: FastifyInstance, config: FileShareConfig, settings: FileShareExtra) {
  const schema = config.database.schema;
  const bus = createEventBus({ pool: app.pool, databaseUrl: config.database.url, channel: `file_share_events_${schema}`, log: app.log });
  app.addHook('onClose', () => bus.close());
  await bus.start();
  // Sign-outs, account and key changes (any replica) reach open event streams at once.
  const changes = createAccountWatch({ databaseUrl: config.database.url, schema, log: app.log });
  app.addHook('onClose', () => changes.close());
  await changes.start();
  const sweeper = createSweeper({
    pool: app.pool,
    store: app.store,
    retentionHours: config.events.retention_hours,
    abandonedAfterSeconds: config.uploads.abandoned_after_seconds,
    log: app.log,
    intervalMs: settings.sweepIntervalMs ?? 60_000,
  });
  app.addHook('onClose', () => sweeper.close());
  sweeper.start();
  app.decorate('fileShare', { bus, sweeper });
  return { bus, sweeper, changes };
}

/** Provider sign-in ends in the same auth_token session as POST /auth/login/basic. */
function providerSignIn(
  app: FastifyInstance,
  config: FileShareConfig,
  publicUrl: string,
  sessions: SessionTokens,
  sessionCookie: ReturnType<typeof createSessionCookiePolicy>,
) {
  return {
    ...hostedSignInOptions(app, SERVICE_NAME, config, publicUrl),
    ok,
    session: {
      start: (reply: Parameters<typeof startSession>[2], user: Parameters<typeof startSession>[3]) => startSession(sessions, sessionCookie, reply, user),
      end: (request: Parameters<typeof endSession>[2], reply: Parameters<typeof endSession>[3]) => endSession(app.accounts, sessionCookie, request, reply),
    },
  };
}
