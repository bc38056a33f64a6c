// The one host every service starts in. In this order: the main listener's port, migrations, the metrics registry
// (first, so the pool and the store count into it), the database pool, object storage, TLS, the kit's app (errors,
// health and readiness, OpenAPI), the shared things as decorators, the first admin, provider accounts, the rate
// limit, the service's plugin, the listener, /metrics on its own listener. It stops them in the reverse order:
// /metrics, the app (the plugin's own onClose hooks: workers, streams, listeners), then the pool.
import type { FastifyInstance } from 'fastify';
import fastifyPlugin from 'fastify-plugin';
import { createAccounts, type Accounts } from '../accounts/accounts.ts';
import { metricsListenOptions } from '../config/common.ts';
import { publicBaseUrl, serverTls } from '../config/service-sections.ts';
import { migrate } from '../db/migrate.ts';
import { logIgnoredErrorsTo } from '../errors/ignore-error.ts';
import { createDatabasePool, pingDatabase, type DatabasePool } from '../db/pool.ts';
import { createApp, type ReadinessCheck } from '../http/create-app.ts';
import { stopGracefully } from '../http/graceful-stop.ts';
import { listenMetrics } from '../metrics/metrics-listener.ts';
import { createMetricsRegistry } from '../metrics/metrics.ts';
import { instrumentStore } from '../metrics/storage-metrics.ts';
import { freePort } from '../net/free-port.ts';
import { createProviderAccounts, type ProviderAccounts } from '../oidc/provider-accounts.ts';
import { installRateLimit } from '../rate-limit/rate-limit.ts';
import { createObjectStore } from '../storage/index.ts';
import type { ObjectStore } from '../storage/types.ts';
import type { RunningService } from '../service-definition.ts';
import type { HostedConfig, MainListener, ServiceSpec, ServiceTls } from './contract.ts';
import { adminCreatedNotice } from './admin-notice.ts';
import { ignoreError } from '../errors/ignore-error.ts';

declare module 'fastify' {
  interface FastifyInstance {
    /** The service's PostgreSQL pool (services with a `database` section). */
    pool: DatabasePool;
    /** The service's object storage (services with a `storage` section). */
    store: ObjectStore;
    /** The kit's accounts (services that declare `accounts`). */
    accounts: Accounts;
    /** Access tokens of the identity provider, when auth.resource_server is configured. */
    providerAccounts: ProviderAccounts | undefined;
    /** The main listener's TLS, when the service set it up itself (spec.tls). */
    serviceTls: ServiceTls | undefined;
  }
}

export interface StartOptions {
  /** Where a generated admin password is printed, once (default: stdout). */
  print?: (text: string) => void;
  /** Passed to the service's plugin as `extra` (test hooks, shorter intervals). */
  extra?: Record<string, unknown>;
  /** The main listener's port instead of the config's (tests; 0: the OS chooses). */
  port?: number;
}

export interface HostedService extends RunningService {
  app: FastifyInstance;
  /** The main listener's port (the OS-chosen one when the config said 0). */
  port: number;
  metricsUrl: string;
}

/** What a failed start undoes, newest first; a started service undoes the same at close (every step runs; the first failure is thrown after). */
class Teardown {
  private readonly steps: (() => Promise<unknown>)[] = [];
  add(step: () => Promise<unknown>): void {
    this.steps.unshift(step);
  }
  async run(): Promise<void> {
    let failure: unknown;
    for (const step of this.steps.splice(0)) {
      await step().catch((error: unknown) => {
        failure ??= error;
      });
    }
    if (failure !== undefined) throw failure;
  }
}

const defaultListener = (config: HostedConfig): MainListener => ({ port: config.server.port, https: config.server.tls.enabled });

/** Starts a service with the given (already loaded) config: see the top of this file for the order. */
export async function startService<C extends HostedConfig>(spec: ServiceSpec<C>, config: C, options: StartOptions = {}): Promise<HostedService> {
  const main = spec.mainListener?.(config) ?? defaultListener(config);
  const wanted = options.port ?? main.port;
  const port = wanted === 0 ? await freePort() : wanted;
  const publicUrl = publicBaseUrl({ ...config.server, tls: { ...config.server.tls, enabled: main.https } }, port);
  const teardown = new Teardown();
  try {
    const app = await buildApp(spec, config, { port, publicUrl, teardown, options });
    await app.listen({ host: config.server.host, port });
    const more = await spec.afterListen?.(app, { config, port });
    if (more) teardown.add(() => more.close());
    const metrics = await listenMetrics(app.metrics, metricsListenOptions(config.metrics, options.port ?? config.server.port, spec.metricsPort));
    teardown.add(() => metrics.close());
    printAdminNotice(spec, config, app, options);
    return {
      name: spec.name,
      app,
      port,
      url: publicUrl,
      metricsUrl: metrics.url,
      close: () => stopGracefully(app, config.server.shutdown, () => teardown.run()),
    };
  } catch (error) {
    await teardown.run().catch(ignoreError("the start's own error is the one to report"));
    throw error;
  }
}

interface BuildContext {
  port: number;
  publicUrl: string;
  teardown: Teardown;
  options: StartOptions;
}

/** Everything up to the listener: the shared things, the kit's app, and the service's plugin in it. */
async function buildApp<C extends HostedConfig>(spec: ServiceSpec<C>, config: C, context: BuildContext): Promise<FastifyInstance> {
  const metrics = createMetricsRegistry({ service: spec.name });
  const pool = await openDatabase(spec, config, metrics);
  if (pool) context.teardown.add(() => pool.end());
  const store = config.storage
    ? instrumentStore(createObjectStore(config.storage), metrics, { bucket: config.storage.driver === 's3' ? config.storage.bucket : undefined })
    : undefined;
  // The certificate may be chosen before the app (and its logger) exists: its warnings wait for the logger.
  const early = deferredLog();
  const tls = spec.tls ? await spec.tls({ config, pool, log: early }) : wrapTls(await serverTls(config.server, config.state_dir));
  const readiness: Record<string, ReadinessCheck> = {};
  if (pool) readiness.postgres = () => pingDatabase(pool);
  if (store) readiness.storage = () => store.check();
  const app = await createApp({
    service: spec.name,
    version: spec.version,
    errorShape: spec.errorShape,
    problemBase: spec.problemBase,
    metrics,
    logLevel: config.logging.level,
    https: tls?.initial,
    trustProxy: config.server.trust_proxy,
    bodyLimit: config.server.body_limit_bytes,
    timeouts: config.server.timeouts,
    readiness,
    openapi: { ...spec.openapi, servers: [{ url: context.publicUrl }] },
  });
  context.teardown.add(() => app.close());
  early.attach(app.log);
  logIgnoredErrorsTo(app.log);
  tls?.attach?.(app);
  decorateShared(app, { pool, store, tls });
  if (spec.accounts) await installAccounts(app, config, context.publicUrl);
  if (config.rate_limiting?.enabled && pool) {
    const limits = config.rate_limiting;
    await installRateLimit(app, {
      pool,
      max: limits.max_requests,
      windowSeconds: limits.window_seconds,
      onStoreError: limits.on_store_error,
      namespace: spec.name,
      ...(spec.rateLimitClasses ? { classes: spec.rateLimitClasses(config) } : {}),
    });
  }
  // The plugin shares the root context (no encapsulation): its hooks and decorators apply to every route, as the
  // kit's own (health, OpenAPI) are there too.
  await app.register(fastifyPlugin(await spec.plugin(), { name: spec.name }), {
    config,
    publicUrl: context.publicUrl,
    port: context.port,
    extra: context.options.extra ?? {},
  });
  await app.ready();
  return app;
}

/** Migrations first (on a connection of their own), then the pool the service uses. */
async function openDatabase<C extends HostedConfig>(
  spec: ServiceSpec<C>,
  config: C,
  metrics: ReturnType<typeof createMetricsRegistry>,
): Promise<DatabasePool | undefined> {
  if (!config.database) return undefined;
  const { url, schema, pool_size: poolSize } = config.database;
  if (!schema) throw new Error(`${spec.name}: database.schema is not set (serviceSections gives each service a default)`);
  await migrate(url, schema, spec.backup?.migrations ?? []);
  return createDatabasePool({ url, schema, poolSize, metrics });
}

function decorateShared(app: FastifyInstance, shared: { pool: DatabasePool | undefined; store: ObjectStore | undefined; tls: ServiceTls | undefined }): void {
  if (shared.pool) app.decorate('pool', shared.pool);
  if (shared.store) app.decorate('store', shared.store);
  app.decorate('serviceTls', shared.tls);
}

/** The kit's accounts with the first admin, and the identity provider's accounts when configured. */
async function installAccounts(app: FastifyInstance, config: HostedConfig, publicUrl: string): Promise<void> {
  const accounts = createAccounts(app.pool);
  const admin = await accounts.ensureAdmin({ username: config.admin?.username ?? 'admin', password: config.admin?.password });
  app.decorate('accounts', accounts);
  generatedPasswords.set(app, admin.created ? admin.password : undefined);
  const provider =
    config.auth && config.session
      ? createProviderAccounts(config.auth, { pool: app.pool, publicUrl, log: app.log, nonceSecret: config.session.secret })
      : undefined;
  app.decorate('providerAccounts', provider);
  if (provider) app.addHook('onClose', () => provider.close());
}

/** A password the host generated for the first admin, printed once the service listens. */
const generatedPasswords = new WeakMap<FastifyInstance, string | undefined>();

function printAdminNotice<C extends HostedConfig>(spec: ServiceSpec<C>, config: C, app: FastifyInstance, options: StartOptions): void {
  const password = generatedPasswords.get(app);
  if (!password) return;
  (options.print ?? console.log)(adminCreatedNotice(spec.name, config.admin?.username ?? 'admin', password));
}

/** Static TLS material (server.tls) as the host carries it. */
const wrapTls = (material: { cert: string; key: string } | undefined): ServiceTls | undefined => (material ? { initial: material } : undefined);

/** A logger's warn that holds what it gets until the real logger is attached. */
function deferredLog() {
  const held: [object, string][] = [];
  let target: FastifyInstance['log'] | undefined;
  return {
    warn(obj: object, msg: string) {
      if (target) target.warn(obj, msg);
      else held.push([obj, msg]);
    },
    attach(log: FastifyInstance['log']) {
      target = log;
      for (const [obj, msg] of held.splice(0)) log.warn(obj, msg);
    },
  };
}
