// Rows as the API shows them: flat, snake_case, ISO 8601 timestamps. Queries select `to_jsonb(<table>)`, so a
// record's columns arrive as one JSON object that these schemas validate and shape; the JSON schemas below
// describe the same records for the OpenAPI description and fast serialisation.
import { z } from 'zod';

/** to_jsonb's timestamptz in UTC (`2026-11-27T10:53:07.123456+00:00`, the fraction trimmed of zeros, or none). */
const UTC_TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,6}))?\+00:00$/;
/**
 * A timestamp as ISO 8601 in UTC with milliseconds, as Date#toISOString writes it (the fraction truncated). Rewritten
 * as text when PostgreSQL wrote it in UTC: parsing a Date per timestamp was 7% of the service's CPU on pages that
 * list many records (make bench ONLY==scale); any other offset goes through Date.
 */
export function isoTimestamp(value: string): string {
  const utc = UTC_TIMESTAMP.exec(value);
  if (!utc) return new Date(value).toISOString();
  return `${utc[1]}.${(utc[2] ?? '').slice(0, 3).padEnd(3, '0')}Z`;
}
const timestamp = z.string().transform(isoTimestamp);
const id = z.number().int();
/** int8 columns selected directly (not through to_jsonb) arrive as BigInt. */
export const int8 = z.union([z.number(), z.bigint()]).transform(Number);

export const organizationRow = z.object({
  id,
  name: z.string(),
  description: z.string(),
  email: z.string().nullable(),
  is_public: z.boolean(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Organization = z.output<typeof organizationRow>;

export const boxRow = z.object({
  id,
  organization_id: id,
  name: z.string(),
  description: z.string(),
  is_public: z.boolean(),
  published: z.boolean(),
  guest_access: z.boolean(),
  user_id: z.string().nullable(),
  service_account_id: id.nullable(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Box = z.output<typeof boxRow>;

export const VERSION_STATUSES = ['unreleased', 'active', 'revoked'] as const;
export type VersionStatus = (typeof VERSION_STATUSES)[number];

export const versionRow = z.object({
  id,
  box_id: id,
  version_number: z.string(),
  description: z.string(),
  status: z.enum(VERSION_STATUSES),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Version = z.output<typeof versionRow>;

export const providerRow = z.object({
  id,
  version_id: id,
  name: z.string(),
  description: z.string(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Provider = z.output<typeof providerRow>;

export const architectureRow = z.object({
  id,
  provider_id: id,
  name: z.string(),
  default_box: z.boolean(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type Architecture = z.output<typeof architectureRow>;

export const fileRow = z.object({
  id,
  architecture_id: id,
  file_name: z.string(),
  storage_key: z.string(),
  size: z.number(),
  sha256: z.string(),
  checksum_type: z.string(),
  checksum: z.string(),
  download_count: z.number(),
  created_at: timestamp,
  updated_at: timestamp,
});
export type BoxFile = z.output<typeof fileRow>;

// ---- JSON schemas of the responses ----

const str = { type: 'string' } as const;
const int = { type: 'integer' } as const;
const bool = { type: 'boolean' } as const;
const time = { type: 'string', format: 'date-time' } as const;
const nullableStr = { type: ['string', 'null'] } as const;

const object = (properties: Record<string, unknown>) =>
  ({ type: 'object', properties, required: Object.keys(properties), additionalProperties: false }) as const;

export const organizationSchema = object({
  id: int,
  name: str,
  description: str,
  email: nullableStr,
  is_public: bool,
  role: { type: ['string', 'null'], description: "The caller's role in the organization (admin, moderator, user), or null." },
  created_at: time,
  updated_at: time,
});

export const boxSchema = object({
  id: int,
  organization_id: int,
  organization: str,
  name: str,
  tag: { type: 'string', description: '`org/box`, the name Vagrant uses.' },
  description: str,
  is_public: bool,
  published: bool,
  guest_access: bool,
  user_id: nullableStr,
  service_account_id: { type: ['integer', 'null'] },
  created_at: time,
  updated_at: time,
});

export const versionSchema = object({
  id: int,
  box_id: int,
  version_number: str,
  description: str,
  status: { type: 'string', enum: [...VERSION_STATUSES] },
  created_at: time,
  updated_at: time,
});

export const providerSchema = object({ id: int, version_id: int, name: str, description: str, created_at: time, updated_at: time });

export const architectureSchema = object({ id: int, provider_id: int, name: str, default_box: bool, created_at: time, updated_at: time });

export const fileSchema = object({
  id: int,
  architecture_id: int,
  file_name: str,
  size: int,
  checksum: str,
  checksum_type: str,
  sha256: str,
  download_count: int,
  download_url: { type: 'string', format: 'uri', description: 'Stable download URL (credentials travel in headers).' },
  created_at: time,
  updated_at: time,
});

export const messageSchema = object({ message: str });

export const toBoxRecord = (box: Box, organization: Organization) => ({
  ...box,
  organization: organization.name,
  tag: `${organization.name}/${box.name}`,
});

export const toFileRecord = (file: BoxFile, downloadUrl: string) => {
  const { storage_key: _key, ...rest } = file;
  return { ...rest, download_url: downloadUrl };
};
