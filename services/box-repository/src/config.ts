// The box repository's configuration: the sections every service shares (contract.md) plus `uploads` and
// `download_links`. Secrets have no defaults: `boxyard dev` and the operator generate them.
import { serviceSections, storageSchema } from '@boxyard/kit';
import { z } from 'zod';

export const SERVICE_NAME = 'box-repository';
export const DEFAULT_PORT = 3000;
const GiB = 1024 ** 3;

export const boxRepositoryConfigSchema = z.strictObject({
  ...serviceSections({ name: SERVICE_NAME, port: DEFAULT_PORT, schema: 'box_repository' }),
  storage: storageSchema,
  uploads: z
    .strictObject({
      max_bytes: z.number().int().positive().default(10 * GiB),
      stall_timeout_seconds: z.number().positive().default(60),
    })
    .prefault({}),
  download_links: z.strictObject({ ttl_seconds: z.number().int().min(1).max(7 * 24 * 3600).default(300) }).prefault({}),
  /** What an identity provider's groups grant (admins: auth.resource_server.admin_groups). */
  group_mapping: z
    .strictObject({
      /** Membership of `organization` with `role` while the user is in `group` (kept in sync on every sign-in). */
      organizations: z
        .array(z.strictObject({ group: z.string().min(1), organization: z.string().min(1), role: z.enum(['admin', 'moderator', 'user']).default('user') }))
        .default([]),
    })
    .prefault({}),
});

export type BoxRepositoryConfig = z.output<typeof boxRepositoryConfigSchema>;
export type BoxRepositoryConfigInput = z.input<typeof boxRepositoryConfigSchema>;
