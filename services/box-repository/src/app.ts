// Builds and starts the box repository: migrations, the database pool, object storage, the kit's app (errors,
// health, metrics, OpenAPI), the rate limit, and the route plugins.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { oidcSignInMigrations } from '@boxyard/kit/oidc-sign-in/index.ts';
import {
  accountMigrations, createAccounts, createProviderAccounts, resourceServerMigrations, createApp, createObjectStore, createSessionTokens, installRateLimit,
  createMailer, createMetricsRegistry, instrumentStore, migrate, pingDatabase, rateLimitMigrations, publicBaseUrl, listenUnencrypted, httpsOrigin, listenMetrics, metricsListenOptions, type MetricsListener, type PlainListener,
} from '@boxyard/kit';
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import type { Server as TlsServer } from 'node:tls';
import { architectureRoutes } from './architectures/routes.ts';
import { authRoutes } from './auth/routes.ts';
import { SESSION_TYP } from './auth/principal.ts';
import { REFRESH_TYP } from './auth/sessions.ts';
import { serviceAccountRoutes } from './auth/service-accounts.ts';
import { clientCredentialRoutes } from './auth/client-credentials.ts';
import { invitationRoutes } from './auth/invitations.ts';
import { mailRoutes } from './mail/routes.ts';
import { userAdminRoutes } from './users/routes.ts';
import { createGroupMembershipSync } from './provider-identity/group-memberships.ts';
import { boxRoutes } from './boxes/routes.ts';
import { consoleRoutes } from './console/routes.ts';
import { DEFAULT_METRICS_PORT, SERVICE_NAME, type BoxRepositoryConfig } from './config.ts';
import type { ServiceContext, TestHooks } from './context.ts';
import { createDownloadLinks } from './files/download-links.ts';
import { createMetadataCache } from './metadata/metadata-cache.ts';
import { fileRoutes } from './files/routes.ts';
import { acceptCamelCase } from './http/camel-case.ts';
import { installProblemTypes, PROBLEM_BASE } from './http/errors.ts';
import { metadataRoutes } from './metadata/routes.ts';
import { organizationRoutes } from './organizations/routes.ts';
import { providerRoutes } from './providers/routes.ts';
import { createListenConnection, createDatabasePool } from '@boxyard/kit';
import { createStorageCleanup } from './storage/cleanup.ts';
import { limitCeilings, limitClassOf } from './limits/classes.ts';
import { createLiveTls } from './setup/live-tls.ts';
import { setupRoutes } from './setup/routes.ts';
import { statusRoutes } from './status/routes.ts';
import { versionRoutes } from './versions/routes.ts';
import { createWebhookMetrics } from './webhooks/metrics.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { createSender } from './webhooks/send.ts';
import { createWebhookWorker } from './webhooks/worker.ts';

export const VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
export const migrations = { namespace: SERVICE_NAME, dir: fileURLToPath(new URL('./migrations', import.meta.url)) };
/** Every migration source, in the order they apply (backup restores exactly these). */
export const migrationSources = [accountMigrations, oidcSignInMigrations, resourceServerMigrations, rateLimitMigrations, migrations];

export interface BuildOptions {
  /** The port the service will listen on, for the OpenAPI `servers` entry (default: config.server.port). */
  port?: number;
  hooks?: TestHooks;
}

export interface BoxRepository {
  app: FastifyInstance;
  ctx: ServiceContext;
}

/**
 * The listeners: `boxyard.api_listen_port_encrypted` (HTTPS) and `boxyard.api_listen_port_unencrypted` (HTTP),
 * or, with neither set, server.port alone (HTTPS when server.tls.enabled).
 */
export function listenPorts(config: BoxRepositoryConfig): { encrypted?: number; unencrypted?: number } {
  const { api_listen_port_encrypted: encrypted, api_listen_port_unencrypted: unencrypted } = config.boxyard;
  const https = encrypted ?? (config.server.tls.enabled && unencrypted === undefined ? config.server.port : undefined);
  const http = unencrypted ?? (https === undefined ? config.server.port : undefined);
  return { ...(https !== undefined ? { encrypted: https } : {}), ...(http !== undefined ? { unencrypted: http } : {}) };
}

/** The main listener's port: HTTPS when there is one. */
const mainPort = (config: BoxRepositoryConfig) => {
  const ports = listenPorts(config);
  return ports.encrypted ?? ports.unencrypted!;
};

export const baseUrl = (config: BoxRepositoryConfig, port = mainPort(config)) =>
  publicBaseUrl({ ...config.server, tls: { ...config.server.tls, enabled: listenPorts(config).encrypted !== undefined } }, port);

export async function buildBoxRepository(config: BoxRepositoryConfig, options: BuildOptions = {}): Promise<BoxRepository> {
  const schema = config.database.schema;
  await migrate(config.database.url, schema, migrationSources);
  // Made first so the pool and the store count into the app's /metrics.
  const metrics = createMetricsRegistry({ service: SERVICE_NAME });
  const pool = await createDatabasePool({ url: config.database.url, schema, poolSize: config.database.pool_size, metrics });
  const store = instrumentStore(createObjectStore(config.storage), metrics, { bucket: config.storage.driver === 's3' ? config.storage.bucket : undefined });
  const secrets = [config.session.secret, ...config.session.previous_secrets];
  // The certificate is chosen before the app (and its logger) exists: its warnings wait for the logger.
  const early: [object, string][] = [];
  const sink: { log?: FastifyInstance['log'] } = {};
  const tlsLog = { warn: (obj: object, msg: string) => (sink.log ? sink.log.warn(obj, msg) : early.push([obj, msg])) };
  const tls = listenPorts(config).encrypted === undefined ? undefined : await createLiveTls({ server: config.server, stateDir: config.state_dir, pool, log: tlsLog, secrets });
  const app = await createApp({
    service: SERVICE_NAME,
    version: VERSION,
    errorShape: 'problem',
    problemBase: PROBLEM_BASE,
    metrics,
    logLevel: config.logging.level,
    https: tls?.initial,
    trustProxy: config.server.trust_proxy,
    bodyLimit: config.server.body_limit_bytes,
    timeouts: config.server.timeouts,
    readiness: { postgres: () => pingDatabase(pool), storage: () => store.check() },
    openapi: {
      title: 'Boxyard box repository',
      description: 'Vagrant boxes: organization > box > version > provider > architecture > file. `vagrant box add org/box` works with VAGRANT_SERVER_URL set to this service.',
      servers: [{ url: baseUrl(config, options.port) }],
    },
  });
  sink.log = app.log;
  for (const [obj, msg] of early) app.log.warn(obj, msg);
  const ctx: ServiceContext = {
    config,
    pool,
    store,
    accounts: createAccounts(pool),
    tokens: createSessionTokens({ secrets, issuer: config.session.issuer, audience: config.session.audience, typ: SESSION_TYP, ttlSeconds: config.session.ttl_seconds }),
    refreshTokens: createSessionTokens({ secrets, issuer: config.session.issuer, audience: config.session.audience, typ: REFRESH_TYP, ttlSeconds: config.auth.jwt.refreshExpiresIn }),
    mailer: config.mail.smtp ? createMailer(config.mail.smtp) : undefined,
    downloadLinks: createDownloadLinks(secrets),
    metadataCache: createMetadataCache(),
    cleanup: createStorageCleanup(pool, store, app.log, { abandonedAfterSeconds: config.uploads.abandoned_after_seconds }),
    // Tokens of the identity provider (auth.resource_server), when configured; their groups keep memberships.
    provider: createProviderAccounts(config.auth, { pool, publicUrl: baseUrl(config, options.port), log: app.log, nonceSecret: config.session.secret }),
    groupMemberships: createGroupMembershipSync(pool, config.group_mapping.organizations),
    hooks: options.hooks ?? {},
    version: VERSION,
    startedAt: new Date(),
    tls,
    listening: {},
  };
  if (tls) tls.attach(app.server as unknown as TlsServer);
  if (config.rate_limiting.enabled) {
    await installRateLimit(app, {
      pool, max: config.rate_limiting.max_requests, windowSeconds: config.rate_limiting.window_seconds, onStoreError: config.rate_limiting.on_store_error, namespace: SERVICE_NAME,
      classes: { of: limitClassOf, max: limitCeilings(config.rate_limiting) },
    });
  }
  // The web console's session cookie is read by the credential resolution of every route (auth/principal.ts).
  await app.register(cookie);
  // Anonymous metadata reads come from memory while changes are heard (metadata/metadata-cache.ts).
  const trustWhileListening = () => void (ctx.metadataCache.listening = metadataListener.connected);
  const metadataListener = createListenConnection({
    databaseUrl: config.database.url,
    channel: `boxyard_metadata:${schema}`,
    applicationName: `boxyard-metadata-${schema}`.slice(0, 63),
    log: app.log,
    onNotification: (payload) => ctx.metadataCache.invalidate(payload ?? ''),
    onLost: trustWhileListening,
    onReconnected: trustWhileListening,
    retryStart: true,
  });
  // This replica's own writes: the trusted metadata is dropped before the answer goes out, so the writer's next
  // read shows its change whatever the notification's timing.
  app.addHook('onSend', async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD' && request.method !== 'OPTIONS') ctx.metadataCache.clearTrusted();
  });
  await app.register(async (api) => {
    installProblemTypes(api);
    acceptCamelCase(api);
    for (const routes of [statusRoutes, setupRoutes, authRoutes, serviceAccountRoutes, clientCredentialRoutes, invitationRoutes, mailRoutes, userAdminRoutes, organizationRoutes, boxRoutes, versionRoutes, providerRoutes, architectureRoutes, fileRoutes, metadataRoutes, webhookRoutes, consoleRoutes]) {
      await api.register(routes, { ctx });
    }
  });
  // Webhook deliveries from the events outbox: every replica may run the worker (webhooks/worker.ts).
  const webhookSender = createSender({ allowPrivate: config.webhooks.allow_private_targets, timeoutSeconds: config.webhooks.timeout_seconds, userAgent: `Boxyard-Webhooks/${VERSION}` });
  const webhookWorker = createWebhookWorker({ pool, config: config.webhooks, sender: webhookSender, metrics: createWebhookMetrics(metrics, pool, config.metrics.database_cache_seconds), log: app.log.child({ component: 'webhooks' }) });
  app.addHook('onReady', async () => {
    ctx.cleanup.start();
    tls?.start();
    if (config.webhooks.deliver) webhookWorker.start();
    await metadataListener.start().then(trustWhileListening, (error: unknown) => app.log.warn({ err: error }, 'metadata LISTEN failed; anonymous metadata reads ask the database'));
  });
  app.addHook('onClose', async () => {
    ctx.cleanup.stop();
    tls?.stop();
    await metadataListener.close();
    await webhookWorker.stop();
    await webhookSender.close();
    await ctx.provider?.close();
    await pool.end();
  });
  return { app, ctx };
}

export interface RunningBoxRepository extends BoxRepository {
  /** The main listener (HTTPS when there is one). */
  url: string;
  /** The unencrypted listener beside an HTTPS one, when configured. */
  unencryptedUrl: string | undefined;
  /** /metrics, on its own listener (metrics.host:metrics.port). */
  metricsUrl: string;
  close(): Promise<void>;
}

/** Builds, creates the first admin (printing a generated password once), and listens. */
export async function startBoxRepository(config: BoxRepositoryConfig, options: BuildOptions & { print?: (line: string) => void } = {}): Promise<RunningBoxRepository> {
  const { freePort } = await import('@boxyard/kit/net/free-port.ts');
  const ports = listenPorts(config);
  let port = options.port ?? mainPort(config);
  if (port === 0) port = await freePort();
  // A second listener: the unencrypted one beside the HTTPS one.
  let plainPort = ports.encrypted !== undefined ? ports.unencrypted : undefined;
  if (plainPort === 0) plainPort = await freePort();
  const built = await buildBoxRepository(config, { ...options, port });
  let plain: PlainListener | undefined;
  let metricsListener: MetricsListener | undefined;
  try {
    const admin = await built.ctx.accounts.ensureAdmin({ username: config.admin.username, password: config.admin.password });
    if (admin.created && admin.password) {
      (options.print ?? console.log)(
        `box-repository: created the admin account '${config.admin.username}' with the generated password\n\n    ${admin.password}\n\n` +
          'It is shown only this once. Set admin.password (or BOXYARD_ADMIN__PASSWORD) to choose it instead.',
      );
    }
    await built.app.listen({ host: config.server.host, port });
    built.ctx.listening = ports.encrypted !== undefined ? { encryptedPort: port, ...(plainPort !== undefined ? { unencryptedPort: plainPort } : {}) } : { unencryptedPort: port };
    if (plainPort !== undefined) {
      const tls = built.ctx.tls;
      plain = await listenUnencrypted(built.app, {
        host: config.server.host, port: plainPort,
        redirectTo: (request) => (tls?.isConfigured() ? httpsOrigin(request, port, config.server.public_url) : undefined),
      });
    }
    metricsListener = await listenMetrics(built.app.metrics, metricsListenOptions(config.metrics, options.port ?? config.server.port, DEFAULT_METRICS_PORT));
  } catch (error) {
    await plain?.close();
    await built.app.close();
    throw error;
  }
  const host = config.server.host.includes(':') ? `[${config.server.host}]` : config.server.host;
  const metrics = metricsListener;
  return { ...built, url: baseUrl(config, port), unencryptedUrl: plain ? `http://${host}:${plain.port}` : undefined, metricsUrl: metrics.url,
    close: async () => {
      await metrics.close();
      await plain?.close();
      await built.app.close();
    },
  };
}
