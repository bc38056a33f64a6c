// The file share's configuration: the kit's shared sections plus uploads, events and anonymous reads.
import { serviceSections, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

export const DEFAULT_PORT = 3001;
export const SERVICE_NAME = 'file-share';
const GiB = 1024 ** 3;

export const fileShareConfigSchema = z.strictObject({
  ...serviceSections({ name: SERVICE_NAME, port: DEFAULT_PORT, schema: 'file_share' }),
  storage: storageSchema,
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
