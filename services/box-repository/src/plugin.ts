// The box repository's own part, inside the host (kit service/host.ts gives it the pool, store, accounts, provider
// accounts and the HTTPS certificate): the route plugins and what they share (context.ts), the metadata cache and
// its LISTEN, storage clean-up, webhook deliveries, and the unencrypted listener beside an HTTPS one.
import { createListenConnection, createMailer, createSessionTokens, httpsOrigin, listenUnencrypted, type PlainListener } from '@boxyard/kit';
import type { PluginOptions } from '@boxyard/kit/service/contract.ts';
import cookie from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import { architectureRoutes } from './architectures/routes.ts';
import { clientCredentialRoutes } from './auth/client-credential-routes.ts';
import { cloudApiRoutes } from './cloud-api/routes.ts';
import { createVersionsSections } from './console/versions-section.ts';
import { createSearchDocumentCache } from './cloud-api/search-document-cache.ts';
import { createSearchPositions } from './cloud-api/search-positions.ts';
import { invitationRoutes } from './auth/invitation-routes.ts';
import { SESSION_TYP } from './auth/principal.ts';
import { authRoutes } from './auth/routes.ts';
import { serviceAccountRoutes } from './auth/service-account-routes.ts';
import { REFRESH_TYP } from './auth/sessions.ts';
import { boxRoutes } from './boxes/routes.ts';
import type { BoxRepositoryConfig } from './config.ts';
import { consoleRoutes } from './console/routes.ts';
import type { ServiceContext, TestHooks } from './context.ts';
import { createDownloadLinks } from './files/download-links.ts';
import { fileRoutes } from './files/routes.ts';
import { acceptCamelCase } from './http/camel-case.ts';
import { installProblemTypes } from './http/errors.ts';
import { mailRoutes } from './mail/routes.ts';
import { createMetadataCache } from './metadata/metadata-cache.ts';
import { metadataRoutes } from './metadata/routes.ts';
import { organizationRoutes } from './organizations/routes.ts';
import { createGroupMembershipSync } from './provider-identity/group-memberships.ts';
import { providerRoutes } from './providers/routes.ts';
import type { LiveTls } from './setup/live-tls.ts';
import { setupRoutes } from './setup/routes.ts';
import { statusRoutes } from './status/routes.ts';
import { createStorageCleanup } from './storage/cleanup.ts';
import { userAdminRoutes } from './users/routes.ts';
import { VERSION } from './version.ts';
import { versionRoutes } from './versions/routes.ts';
import { createWebhookMetrics } from './webhooks/metrics.ts';
import { webhookRoutes } from './webhooks/routes.ts';
import { createSender } from './webhooks/send.ts';
import { createWebhookWorker } from './webhooks/worker.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** What the box repository's route plugins share (tests reach in through it). */
    boxRepository: ServiceContext;
  }
}

/** Test settings (startService's `extra`). */
export interface BoxRepositoryExtra {
  hooks?: TestHooks;
}

const ROUTES = [
  statusRoutes,
  setupRoutes,
  authRoutes,
  serviceAccountRoutes,
  clientCredentialRoutes,
  invitationRoutes,
  mailRoutes,
  userAdminRoutes,
  organizationRoutes,
  boxRoutes,
  versionRoutes,
  providerRoutes,
  architectureRoutes,
  fileRoutes,
  metadataRoutes,
  webhookRoutes,
  consoleRoutes,
  cloudApiRoutes,
];

export async function boxRepositoryPlugin(app: FastifyInstance, { config, extra }: PluginOptions<BoxRepositoryConfig>): Promise<void> {
  const ctx = serviceContext(app, config, (extra as BoxRepositoryExtra).hooks ?? {});
  app.decorate('boxRepository', ctx);
  // The web console's session cookie is read by the credential resolution of every route (auth/principal.ts).
  await app.register(cookie);
  listenForMetadataChanges(app, ctx);
  await app.register(async (api) => {
    installProblemTypes(api);
    acceptCamelCase(api);
    for (const routes of ROUTES) await api.register(routes, { ctx });
  });
  startWorkers(app, ctx);
}

function serviceContext(app: FastifyInstance, config: BoxRepositoryConfig, hooks: TestHooks): ServiceContext {
  const secrets = [config.session.secret, ...config.session.previous_secrets];
  const { issuer, audience } = config.session;
  return {
    config,
    pool: app.pool,
    store: app.store,
    accounts: app.accounts,
    tokens: createSessionTokens({ secrets, issuer, audience, typ: SESSION_TYP, ttlSeconds: config.session.ttl_seconds }),
    refreshTokens: createSessionTokens({ secrets, issuer, audience, typ: REFRESH_TYP, ttlSeconds: config.auth.jwt.refreshExpiresIn }),
    mailer: config.mail.smtp ? createMailer(config.mail.smtp) : undefined,
    downloadLinks: createDownloadLinks(secrets),
    metadataCache: createMetadataCache(),
    searchDocuments: createSearchDocumentCache(),
    searchPositions: createSearchPositions(),
    versionsSections: createVersionsSections(),
    cleanup: createStorageCleanup(app.pool, app.store, app.log, { abandonedAfterSeconds: config.uploads.abandoned_after_seconds }),
    // Tokens of the identity provider (auth.resource_server), when configured; their groups keep memberships.
    provider: app.providerAccounts,
    groupMemberships: createGroupMembershipSync(app.pool, config.group_mapping.organizations),
    hooks,
    version: VERSION,
    startedAt: new Date(),
    tls: liveTlsOf(app),
    listening: {},
  };
}

/** The certificate the service set up (service.ts: spec.tls), when it listens with HTTPS. */
const liveTlsOf = (app: FastifyInstance) => (app.serviceTls as { live?: LiveTls } | undefined)?.live;

/** Anonymous metadata reads come from memory while changes are heard (metadata/metadata-cache.ts). */
function listenForMetadataChanges(app: FastifyInstance, ctx: ServiceContext): void {
  const schema = ctx.config.database.schema;
  const trustWhileListening = () => void (ctx.metadataCache.listening = metadataListener.connected);
  const metadataListener = createListenConnection({
    databaseUrl: ctx.config.database.url,
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
  app.addHook('onReady', async () => {
    await metadataListener
      .start()
      .then(trustWhileListening, (error: unknown) => app.log.warn({ err: error }, 'metadata LISTEN failed; anonymous metadata reads ask the database'));
  });
  app.addHook('onClose', () => metadataListener.close());
}

/** Storage clean-up, certificate refresh and webhook deliveries from the events outbox (every replica may run them). */
function startWorkers(app: FastifyInstance, ctx: ServiceContext): void {
  const { config } = ctx;
  const sender = createSender({
    allowPrivate: config.webhooks.allow_private_targets,
    timeoutSeconds: config.webhooks.timeout_seconds,
    userAgent: `Boxyard-Webhooks/${ctx.version}`,
  });
  const worker = createWebhookWorker({
    pool: ctx.pool,
    config: config.webhooks,
    sender,
    metrics: createWebhookMetrics(app.metrics, ctx.pool, config.metrics.database_cache_seconds),
    log: app.log.child({ component: 'webhooks' }),
  });
  app.addHook('onReady', async () => {
    ctx.cleanup.start();
    ctx.tls?.start();
    if (config.webhooks.deliver) worker.start();
  });
  app.addHook('onClose', async () => {
    ctx.cleanup.stop();
    ctx.tls?.stop();
    await worker.stop();
    await sender.close();
  });
}

/** After the main listener: the unencrypted one beside an HTTPS one (redirecting once a certificate is configured). */
export async function listenBesideHttps(
  app: FastifyInstance,
  config: BoxRepositoryConfig,
  port: number,
  ports: { encrypted?: number; unencrypted?: number },
): Promise<PlainListener | undefined> {
  const ctx = app.boxRepository;
  if (ports.encrypted === undefined) {
    ctx.listening = { unencryptedPort: port };
    return undefined;
  }
  let plainPort = ports.unencrypted;
  if (plainPort === undefined) {
    ctx.listening = { encryptedPort: port };
    return undefined;
  }
  if (plainPort === 0) plainPort = await (await import('@boxyard/kit/net/free-port.ts')).freePort();
  const plain = await listenUnencrypted(app, {
    host: config.server.host,
    port: plainPort,
    redirectTo: (request) => (ctx.tls?.isConfigured() ? httpsOrigin(request, port, config.server.public_url) : undefined),
  });
  ctx.listening = { encryptedPort: port, unencryptedPort: plain.port };
  return plain;
}
