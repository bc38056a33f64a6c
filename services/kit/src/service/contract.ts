// The service contract: what a Boxyard service declares once (`defineService`), and what the host (host.ts) and
// the `boxyard` command read from it. A service's folder then holds only what is its own: its config schema, its
// migrations and backup rules, and its plugin; the host does the common work in one order (host.ts says which).
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { BackupDescriptor } from '../backup.ts';
import type { ClusterKind } from './cluster-kind.ts';
import type { AuthConfig } from '../config/auth-section.ts';
import type { DatabaseConfig, MetricsConfig, RateLimitConfig, ServerConfig, SessionConfig, StorageConfig } from '../config/common.ts';
import type { DatabasePool } from '../db/pool.ts';
import type { ErrorShape } from '../http/error-handler.ts';
import type { DevContext, ServiceConfigBase, ServiceDefinition } from '../service-definition.ts';

/** The sections the host reads; each service's schema has them through `serviceSections` (or a subset). */
export interface HostedConfig extends ServiceConfigBase {
  server: ServerConfig;
  metrics: MetricsConfig;
  logging: { level: string };
  database?: DatabaseConfig;
  storage?: StorageConfig;
  session?: SessionConfig;
  admin?: { username: string; password?: string };
  auth?: AuthConfig;
  rate_limiting?: RateLimitConfig;
  state_dir?: string;
}

/** The main listener: its port and whether it speaks HTTPS (default: server.port, HTTPS when server.tls.enabled). */
export interface MainListener {
  port: number;
  https: boolean;
}

/** TLS material of the main listener, and how it follows the app (a certificate that can change while running). */
export interface ServiceTls {
  initial: { cert: string; key: string };
  /** Called once the app exists (e.g. to swap the certificate on its server); its logger is ready then. */
  attach?(app: FastifyInstance): void;
}

/** What a service's plugin is given besides the decorators (host.ts lists those). */
export interface PluginOptions<C> {
  config: C;
  /** The URL users reach the service at (server.public_url, or the listener's own address). */
  publicUrl: string;
  /** The main listener's port (the OS-chosen one when the config said 0). */
  port: number;
  /** Options the caller of startService passed for this service (test hooks, shorter intervals). */
  extra: Record<string, unknown>;
}

export type ServicePlugin<C> = (app: FastifyInstance, options: PluginOptions<C>) => Promise<void>;

export interface ServiceSpec<C extends HostedConfig> {
  /** `boxyard serve <name>`; the metrics `service` label; the prefix of its messages. */
  name: string;
  version: string;
  /** The config schema (strict: unknown keys stop start-up, naming them). */
  config: z.ZodType<C>;
  /** The default of metrics.port (each service has its own, so one machine runs them all). */
  metricsPort: number;
  errorShape: ErrorShape;
  problemBase?: string;
  openapi: { title: string; description?: string; openapi?: '3.0.3' | '3.1.0' };
  /** Tables and migrations (in the order they apply); absent for a service that keeps nothing. */
  backup?: BackupDescriptor;
  /** The service's custom resource kind, when it runs in a cluster (kind.ts beside it; the operator reconciles it). */
  kind?: ClusterKind;
  /** Whether the host makes the kit's accounts (with the first admin) and provider accounts; the rate limit follows rate_limiting. */
  accounts?: boolean;
  /** Rate-limit classes with ceilings of their own (default: one limit for every request). */
  rateLimitClasses?(config: C): { of: (request: FastifyRequest) => string | undefined; max: Record<string, number> };
  /** The main listener, when not server.port/server.tls (the box repository's seed ports). */
  mainListener?(config: C): MainListener;
  /** TLS of the main listener, when not server.tls (the box repository's certificate set up through its API). */
  tls?(context: { config: C; pool: DatabasePool | undefined; log: { warn(obj: object, msg: string): void } }): Promise<ServiceTls | undefined>;
  /** After the main listener listens (more listeners of its own, closed before the app); a failure stops the start. */
  afterListen?(app: FastifyInstance, context: { config: C; port: number }): Promise<{ close(): Promise<void> } | undefined>;
  /** The embedded defaults of `boxyard dev` (a home directory, the shared database, generated secrets). */
  devDefaults(context: DevContext): Promise<Record<string, unknown>>;
  /** The service's own routes, workers and hooks: loaded when the service starts, so listing services loads none. */
  plugin(): Promise<ServicePlugin<C>>;
}

/** A service as the registry lists it: its declaration, and how the `boxyard` command starts it. */
export interface ServiceModule<C extends HostedConfig = HostedConfig> extends ServiceDefinition, Omit<ServiceSpec<C>, 'name'> {
  name: string;
}

/** A service as lists hold it (the registry, the `boxyard` command): the parts that do not depend on its config type. */
export type RegisteredService = ServiceDefinition & Pick<ServiceSpec<HostedConfig>, 'version' | 'metricsPort' | 'backup' | 'kind' | 'config'>;
