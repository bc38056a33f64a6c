// The file share's configuration: the kit's shared sections plus uploads, events and anonymous reads.
import { serviceSections, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

/** /metrics listens apart from the public port (loopback by default). */
export const DEFAULT_METRICS_PORT = 9301;
export const DEFAULT_PORT = 3001;
export const SERVICE_NAME = 'file-share';
const GiB = 1024 ** 3;

export const fileShareConfigSchema = z.strictObject({
  ...serviceSections({ name: SERVICE_NAME, port: DEFAULT_PORT, schema: 'file_share' }),
  storage: storageSchema,
  uploads: z
    .strictObject({
      max_bytes: z
        .number()
        .int()
        .positive()
        .default(5 * GiB)
        .describe('Largest file accepted (413 above).'),
      // What a crashed upload left (a local .tmp file, an unfinished S3 multipart upload) goes once this old.
      abandoned_after_seconds: z
        .number()
        .int()
        .min(1)
        .default(24 * 3600),
      resumable: z
        .strictObject({
          expires_after_seconds: z
            .number()
            .int()
            .min(60)
            .max(30 * 24 * 3600)
            .default(24 * 3600)
            .describe('An unfinished resumable (tus) upload expires this long after its last chunk; its bytes are then removed.'),
        })
        .prefault({})
        .describe('Resumable uploads (tus 1.0, /api/uploads).'),
    })
    .prefault({})
    .describe('File uploads.'),
  events: z
    .strictObject({
      heartbeat_seconds: z.number().positive().default(15).describe('Heartbeat interval on open event streams.'),
      retention_hours: z.number().positive().default(24).describe('How long events stay available for replay (Last-Event-ID).'),
      /** Open event streams per user (or API key, or anonymous address) and in all, per replica: 429 / 503 beyond. */
      max_streams_per_user: z.number().int().min(1).max(10_000).default(10),
      max_streams: z.number().int().min(1).max(1_000_000).default(1000),
    })
    .prefault({})
    .describe('Live events (server-sent events).'),
  shares: z
    .strictObject({
      default_expiry_seconds: z
        .number()
        .int()
        .min(60)
        .default(7 * 24 * 3600)
        .describe('Lifetime of a share link or file request made without an expiry.'),
      max_expiry_seconds: z
        .number()
        .int()
        .min(60)
        .default(90 * 24 * 3600)
        .describe('Longest lifetime a link may be given (400 beyond).'),
      // Wrong passwords tolerated in a window, per link and per client address (all replicas: PostgreSQL); 429 beyond.
      password_failures_per_link: z.number().int().min(1).max(100_000).default(10),
      password_failures_per_address: z.number().int().min(1).max(100_000).default(30),
      password_window_seconds: z.number().int().min(1).max(86_400).default(900),
    })
    .prefault({})
    .refine((shares) => shares.default_expiry_seconds <= shares.max_expiry_seconds, {
      message: 'default_expiry_seconds must not exceed max_expiry_seconds',
      path: ['default_expiry_seconds'],
    })
    .describe('Share links and file requests.'),
  /** Anonymous callers may list, download, search and follow events. Off by default: a share is private. */
  public_read: z.boolean().default(false),
  /** What an identity provider's groups grant (admins, with every permission: auth.resource_server.admin_groups). */
  group_mapping: z
    .strictObject({
      /** A provider user holds the union of the permissions of its groups listed here ... */
      permissions: z.array(z.strictObject({ group: z.string().min(1), permissions: z.array(z.enum(['downloads', 'uploads', 'delete'])).min(1) })).default([]),
      /** ... or these when none of its groups is listed (a password user's default). */
      default_permissions: z.array(z.enum(['downloads', 'uploads', 'delete'])).default(['downloads', 'uploads']),
    })
    .prefault({}),
});

export type FileShareConfig = z.output<typeof fileShareConfigSchema>;
