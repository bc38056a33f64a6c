// The box repository's configuration: the sections every service shares (contract.md) plus `uploads` and
// `download_links`. Secrets have no defaults: `boxyard dev` and the operator generate them.
import { databaseSchema, loggingSchema, rateLimitSchema, serverSchema, sessionSchema, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

export const SERVICE_NAME = 'box-repository';
export const DEFAULT_PORT = 3000;
const GiB = 1024 ** 3;

export const boxRepositoryConfigSchema = z.strictObject({
  server: serverSchema.extend({ port: serverSchema.shape.port.default(DEFAULT_PORT) }).prefault({}),
  logging: loggingSchema,
  database: databaseSchema.extend({ schema: databaseSchema.shape.schema.unwrap().default('box_repository') }),
  storage: storageSchema,
  rate_limiting: rateLimitSchema,
  session: sessionSchema.extend({
    issuer: sessionSchema.shape.issuer.default('boxyard-box-repository'),
    audience: sessionSchema.shape.audience.default('boxyard-box-repository'),
  }),
  admin: z
    .strictObject({
      username: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'letters, digits, ".", "_" and "-" only, 1 to 64 characters').default('admin'),
      /** Absent: generated on first start and printed once. */
      password: z.string().min(8).optional(),
    })
    .prefault({}),
  uploads: z
    .strictObject({
      max_bytes: z.number().int().positive().default(10 * GiB),
      stall_timeout_seconds: z.number().positive().default(60),
    })
    .prefault({}),
  download_links: z.strictObject({ ttl_seconds: z.number().int().min(1).max(7 * 24 * 3600).default(300) }).prefault({}),
});

export type BoxRepositoryConfig = z.output<typeof boxRepositoryConfigSchema>;
export type BoxRepositoryConfigInput = z.input<typeof boxRepositoryConfigSchema>;
