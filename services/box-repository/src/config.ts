// The box repository's configuration: the sections every service shares (contract.md) plus `uploads` and
// `download_links`. Secrets have no defaults: `boxyard dev` and the operator generate them.
import { authSchemaWith, rateLimitSchema, serviceSections, smtpSchema, storageSchema } from '@boxyard/kit';
import { z } from 'zod';
import { DEFAULT_INSPECTION_LIMITS } from './files/box-inspector.ts';

export const SERVICE_NAME = 'box-repository';
/** /metrics listens apart from the public port (loopback by default). */
export const DEFAULT_METRICS_PORT = 9300;
export const DEFAULT_PORT = 3000;
const GiB = 1024 ** 3;
const port = z.number().int().min(0).max(65535);
const ceiling = (fallback: number) => z.number().int().positive().default(fallback);

/**
 * The seed's limits: `max_requests` per `window_minutes` (default 1000 per 15 minutes) for requests of no class,
 * and ceilings of their own, on the same window, for the classes below (limits/classes.ts says which routes).
 * `window_seconds` (what the operator writes) is accepted too; given both, they must agree.
 */
export const boxRateLimitSchema = rateLimitSchema
  .unwrap()
  .extend({
    max_requests: ceiling(1000),
    window_seconds: z.number().int().positive().optional(),
    window_minutes: z.number().positive().optional(),
    file_operations_max_requests: ceiling(100).describe(
      'Requests per window for file operations: uploads, file information and deletion (…/architecture/{arch}/file…).',
    ),
    download_max_requests: ceiling(1000).describe('Requests per window for box metadata and file downloads (what `vagrant box add` does).'),
    download_link_max_requests: ceiling(300).describe('Requests per window for …/file/get-download-link.'),
    architecture_operations_max_requests: ceiling(300).describe('Requests per window for the other …/architecture… routes.'),
  })
  .transform((limits, context) => {
    const fromMinutes = limits.window_minutes === undefined ? undefined : Math.round(limits.window_minutes * 60);
    if (fromMinutes !== undefined && limits.window_seconds !== undefined && fromMinutes !== limits.window_seconds) {
      context.addIssue({ code: 'custom', path: ['window_minutes'], message: `disagrees with window_seconds (${limits.window_seconds}); give one of them` });
      return z.NEVER;
    }
    return { ...limits, window_seconds: limits.window_seconds ?? fromMinutes ?? 15 * 60 };
  })
  .prefault({})
  .describe('Request rate limit per client, shared across replicas: the global limit and the ceilings of the request classes, on the same window.');

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };
/** A lifetime: seconds, or a number with a unit (`90s`, `15m`, `24h`, `30d`), as the seed's `expiresIn: 24h`. */
const lifetime = z
  .union([
    z.number().int().positive(),
    z
      .string()
      .regex(/^\d+\s*[smhd]?$/, 'a number of seconds, or a number with s, m, h or d (e.g. 24h)')
      .transform((text) => {
        const [, amount = '0', unit = 's'] = /^(\d+)\s*([smhd]?)$/.exec(text) ?? [];
        return Number(amount) * UNIT_SECONDS[unit || 's']!;
      }),
  ])
  .pipe(
    z
      .number()
      .int()
      .positive()
      .max(366 * 86_400, 'at most 366 days'),
  );

/** `auth.jwt`: lifetimes of session tokens, as the seed names the key. */
const jwtSchema = z
  .strictObject({
    /** Access (session) tokens; default: session.ttl_seconds. */
    expiresIn: lifetime.optional(),
    /** A session signed in with stayLoggedIn: its access token (refresh variant A) and its refresh tokens' family. */
    stayLoggedInExpiresIn: lifetime.default(30 * 86_400),
    /** Refresh tokens (variant B) of a session signed in without stayLoggedIn: how long it may be refreshed. */
    refreshExpiresIn: lifetime.default(86_400),
  })
  .prefault({});

export const boxRepositoryConfigSchema = z.strictObject({
  ...serviceSections({ name: SERVICE_NAME, port: DEFAULT_PORT, schema: 'box_repository' }),
  storage: storageSchema,
  rate_limiting: boxRateLimitSchema,
  /**
   * The seed's two listeners. Unset, the service listens on server.port alone (HTTPS when server.tls.enabled).
   * The unencrypted one redirects to HTTPS while a certificate is configured (server.tls files or one uploaded
   * through /api/setup/upload-ssl); with only the generated self-signed one it serves the API itself.
   */
  boxyard: z
    .strictObject({ api_listen_port_encrypted: port.optional(), api_listen_port_unencrypted: port.optional() })
    .refine((ports) => !ports.api_listen_port_encrypted || ports.api_listen_port_encrypted !== ports.api_listen_port_unencrypted, {
      path: ['api_listen_port_unencrypted'],
      message: 'must differ from api_listen_port_encrypted',
    })
    .prefault({}),
  auth: authSchemaWith({
    jwt: jwtSchema,
    /**
     * Who may create an account with POST /api/auth/signup (and the console's form): `open` anyone, `invited` only
     * with an invitation token (POST /api/auth/invite), `off` nobody. Not `open` by default: anyone who reaches the
     * server could otherwise make themselves an account (`boxyard dev` opens it; see docs/configuration.md).
     */
    sign_up: z
      .enum(['open', 'invited', 'off'])
      .default('invited')
      .describe(
        'Who may create an account through sign-up: open (anyone who reaches the service), invited (only with an invitation from a moderator or admin of an organization) or off (accounts come from the identity provider and the admin).',
      ),
  }),
  /** Outgoing mail (invitation links); without `smtp` no mail is sent and the link is only returned. */
  mail: z.strictObject({ smtp: smtpSchema.optional() }).prefault({}),
  invitations: z.strictObject({ expires_in: lifetime.default(7 * 86_400) }).prefault({}),
  uploads: z
    .strictObject({
      max_bytes: z
        .number()
        .int()
        .positive()
        .default(10 * GiB)
        .describe('Largest box file accepted (413 above).'),
      stall_timeout_seconds: z.number().positive().default(60).describe('An upload that sends nothing for this long is cut off (408).'),
      /**
       * What a crash mid-upload leaves (local: a temp file no longer written to; s3: a multipart upload this
       * service started) is removed once this old. On s3 the age counts from the upload's start: keep it
       * longer than the slowest upload.
       */
      abandoned_after_seconds: z
        .number()
        .int()
        .min(1)
        .default(24 * 3600),
      /**
       * The publishing API's upload URLs (`vagrant cloud publish`, Packer): an upload must start this soon after
       * its URL was handed out. On s3 a direct upload's URL is presigned for this long: keep it short.
       */
      upload_url_ttl_seconds: z
        .number()
        .int()
        .min(10)
        .max(24 * 3600)
        .default(900),
      /**
       * What the box check (files/box-inspector.ts) unpacks while looking for metadata.json, so a gzip bomb is
       * refused (422) at a limit instead of being inflated to its end. Real boxes often put metadata.json after
       * the disk image: max_unpacked_bytes must exceed the largest unpacked disk image accepted.
       */
      inspection: z
        .strictObject({
          max_unpacked_bytes: z.number().int().positive().default(DEFAULT_INSPECTION_LIMITS.max_unpacked_bytes),
          max_expansion_ratio: z.number().positive().default(DEFAULT_INSPECTION_LIMITS.max_expansion_ratio),
          max_entries: z.number().int().positive().default(DEFAULT_INSPECTION_LIMITS.max_entries),
        })
        .prefault({}),
    })
    .prefault({})
    .describe('Box file uploads.'),
  download_links: z
    .strictObject({
      ttl_seconds: z
        .number()
        .int()
        .min(1)
        .max(7 * 24 * 3600)
        .default(300)
        .describe('Lifetime of a download link.'),
      /**
       * s3 driver: answer a download (GET, after the read check) with 302 to a presigned storage URL valid for
       * `storage_url_ttl_seconds`, so the bytes flow from storage to the client directly. Off by default: the
       * storage endpoint must then be reachable by every client, under the name configured in `storage.endpoint`.
       */
      redirect_to_storage: z.boolean().default(false),
      storage_url_ttl_seconds: z.number().int().min(1).max(3600).default(60),
    })
    .prefault({})
    .describe('Signed download links.'),
  /** What an identity provider's groups grant (admins: auth.resource_server.admin_groups). */
  group_mapping: z
    .strictObject({
      /** Membership of `organization` with `role` while the user is in `group` (kept in sync on every sign-in). */
      organizations: z
        .array(z.strictObject({ group: z.string().min(1), organization: z.string().min(1), role: z.enum(['admin', 'moderator', 'user']).default('user') }))
        .default([]),
    })
    .prefault({}),
  /** Webhook delivery (webhooks/): every replica may run the worker; PostgreSQL hands each delivery to one. */
  webhooks: z
    .strictObject({
      /** Whether this replica delivers (any number of replicas may). */
      deliver: z.boolean().default(true),
      /** Targets on loopback, private, link-local and other non-public addresses are refused unless this is on. */
      allow_private_targets: z.boolean().default(false),
      /** One attempt: connect, send and read the answer. */
      timeout_seconds: z.number().positive().max(300).default(10),
      /** How often an idle worker looks for new events and due retries. */
      poll_interval_seconds: z.number().positive().max(60).default(1),
      /** Attempts before a delivery is marked failed. */
      max_attempts: z.number().int().min(1).max(50).default(8),
      /** Wait before the first retry, doubled for every further one (with jitter), up to backoff_max_seconds. */
      backoff_initial_seconds: z.number().positive().default(10),
      backoff_max_seconds: z.number().positive().default(3600),
      /** Deliveries sent at once by one replica. */
      concurrency: z.number().int().min(1).max(100).default(10),
      /** Finished deliveries (and their events) are kept this long for the delivery log. */
      log_retention_days: z.number().positive().default(30),
    })
    .refine((w) => w.backoff_initial_seconds <= w.backoff_max_seconds, {
      message: 'must not be more than backoff_max_seconds',
      path: ['backoff_initial_seconds'],
    })
    .prefault({}),
});

export type BoxRepositoryConfig = z.output<typeof boxRepositoryConfigSchema>;
export type BoxRepositoryConfigInput = z.input<typeof boxRepositoryConfigSchema>;
