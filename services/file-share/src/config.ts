// The file share's configuration: the kit's shared sections plus uploads, events and anonymous reads.
import { databaseSchema, loggingSchema, rateLimitSchema, serverSchema, sessionSchema, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

export const DEFAULT_PORT = 3001;
export const SERVICE_NAME = 'file-share';
const GiB = 1024 ** 3;

export const fileShareConfigSchema = z.strictObject({
  server: serverSchema.extend({ port: serverSchema.shape.port.default(DEFAULT_PORT) }).prefault({}),
  logging: loggingSchema,
  database: databaseSchema.extend({ schema: databaseSchema.shape.schema.unwrap().default('file_share') }),
  storage: storageSchema,
  rate_limiting: rateLimitSchema,
  session: sessionSchema.extend({
    issuer: z.string().min(1).default('boxyard-file-share'),
    audience: z.string().min(1).default('boxyard-file-share'),
  }),
  admin: z
    .strictObject({
      username: z.string().min(1).default('admin'),
      /** Absent: generated on first start and printed once. */
      password: z.string().min(1).optional(),
    })
    .prefault({}),
  uploads: z.strictObject({ max_bytes: z.number().int().positive().default(5 * GiB) }).prefault({}),
  events: z
    .strictObject({
      heartbeat_seconds: z.number().positive().default(15),
      retention_hours: z.number().positive().default(24),
    })
    .prefault({}),
  /** Anonymous callers may list, download, search and follow events. Off by default: a share is private. */
  public_read: z.boolean().default(false),
});

export type FileShareConfig = z.output<typeof fileShareConfigSchema>;
