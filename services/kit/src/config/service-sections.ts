// The config sections every Boxyard service starts with (the operator writes them), with each service's own
// defaults, and what follows from `server`: the public base URL and the TLS material.
import { z } from 'zod';
import { checkPassword } from '../auth/password-policy.ts';
import { resolveTls, type TlsMaterial } from '../http/tls.ts';
import { authSchema } from './auth-section.ts';
import { databaseSchema, loggingSchema, metricsSchema, rateLimitSchema, serverSchema, sessionSchema, type ServerConfig } from './common.ts';
import { withoutTrailingSlashes } from '../text/trim.ts';

/** A username the accounts accept; the CRDs' auth.adminUsername uses the same pattern (a name the service refused crash-looped its pods). */
export const USERNAME_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

/** The first admin: created on first start; without a password one is generated and printed once. */
export const adminSchema = z
  .strictObject({
    username: z.string().regex(USERNAME_PATTERN, 'letters, digits, ".", "_" and "-" only, 1 to 64 characters').default('admin'),
    // The same password rules as every other account: a weak admin password stops start-up, naming the rules.
    password: z
      .string()
      .superRefine((password, ctx) => {
        const failures = checkPassword(password);
        if (failures.length > 0) ctx.addIssue({ code: 'custom', message: `does not meet the password rules: ${failures.map((f) => f.detail).join('; ')}` });
      })
      .optional(),
  })
  .prefault({});

/** server, metrics, logging, database, rate_limiting, session, admin, auth, state_dir — spread into the service's strictObject. */
export function serviceSections(service: { name: string; port: number; schema: string }) {
  return {
    server: serverSchema.extend({ port: serverSchema.shape.port.default(service.port) }).prefault({}),
    metrics: metricsSchema.prefault({}),
    logging: loggingSchema,
    database: databaseSchema.extend({ schema: databaseSchema.shape.schema.unwrap().default(service.schema) }),
    rate_limiting: rateLimitSchema,
    session: sessionSchema.extend({
      issuer: sessionSchema.shape.issuer.default(`boxyard-${service.name}`),
      audience: sessionSchema.shape.audience.default(`boxyard-${service.name}`),
    }),
    admin: adminSchema,
    auth: authSchema,
    /** Where the service keeps local state that must survive restarts (a generated self-signed certificate). */
    state_dir: z.string().min(1).optional(),
  };
}

/** The URL users reach the service at: `server.public_url`, else the listener's own address. */
export function publicBaseUrl(server: ServerConfig, port = server.port): string {
  if (server.public_url) return withoutTrailingSlashes(server.public_url);
  const host = server.host.includes(':') ? `[${server.host}]` : server.host;
  return `${server.tls.enabled ? 'https' : 'http'}://${host}:${port}`;
}

/** TLS material when `server.tls.enabled`: the given files, or a self-signed certificate kept in `stateDir`. */
export async function serverTls(server: ServerConfig, stateDir?: string): Promise<TlsMaterial | undefined> {
  if (!server.tls.enabled) return undefined;
  return resolveTls({ cert: server.tls.cert, key: server.tls.key, hosts: [server.host], cacheDir: stateDir });
}
