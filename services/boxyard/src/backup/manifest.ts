// manifest.json: what a backup holds and how to prove it is intact. Every file in the backup is listed with its
// size and sha256; restore checks them all before it writes anything.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { BackupError } from './errors.ts';
import { BOXYARD_VERSION, compareVersions } from './version.ts';

export const MANIFEST_FILE = 'manifest.json';
export const FORMAT = 'boxyard-backup';
export const FORMAT_VERSION = 1;

const fileRecord = {
  /** Relative to the backup directory. */
  file: z.string().regex(/^(?!\/)(?!.*(^|\/)\.\.?(\/|$)).+$/, 'must be a relative path inside the backup'),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
};

const tableRecord = z.object({
  name: z.string(),
  /** The columns in the order of the file (COPY text format). */
  columns: z.array(z.string()).min(1),
  rows: z.number().int().nonnegative(),
  ...fileRecord,
});

const sequenceRecord = z.object({
  table: z.string(),
  column: z.string(),
  /** bigint, as text. */
  last_value: z.string().regex(/^-?\d+$/),
  is_called: z.boolean(),
});

const objectRecord = z.object({ key: z.string().min(1), ...fileRecord });

const serviceRecord = z.object({
  schema: z.string(),
  /** Applied migrations (schema_migrations), in the order they were applied. */
  migrations: z.array(z.object({ id: z.string(), checksum: z.string() })),
  /** In load order: a table comes after the tables it references. */
  tables: z.array(tableRecord),
  sequences: z.array(sequenceRecord),
  objects: z.array(objectRecord),
});

export const manifestSchema = z.object({
  format: z.literal(FORMAT),
  format_version: z.number().int(),
  boxyard_version: z.string(),
  created_at: z.string(),
  postgres_version: z.string().optional(),
  /** The home's secrets.json, when it had one. */
  secrets: z.object(fileRecord).nullable(),
  services: z.record(z.string(), serviceRecord),
});

export type Manifest = z.infer<typeof manifestSchema>;
export type ServiceRecord = z.infer<typeof serviceRecord>;
export type TableRecord = z.infer<typeof tableRecord>;
export type SequenceRecord = z.infer<typeof sequenceRecord>;
export type ObjectRecord = z.infer<typeof objectRecord>;
export type FileRecord = z.infer<z.ZodObject<typeof fileRecord>>;

export async function readManifest(dir: string): Promise<Manifest> {
  const path = join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new BackupError(`${dir} is not a Boxyard backup: it has no ${MANIFEST_FILE}`);
    throw error;
  }
  return parseManifest(text);
}

/** A backup made by a newer Boxyard (or in a newer format) is refused before anything is read or written. */
export function checkManifestVersions(manifest: Manifest, ours = BOXYARD_VERSION): void {
  if (manifest.format_version > FORMAT_VERSION) {
    throw new BackupError(
      `the backup has format version ${manifest.format_version}; this Boxyard reads up to ${FORMAT_VERSION}: restore it with a newer Boxyard`,
    );
  }
  if (compareVersions(manifest.boxyard_version, ours) > 0) {
    throw new BackupError(
      `the backup was made by Boxyard ${manifest.boxyard_version}, newer than this Boxyard ${ours}: restore it with Boxyard ${manifest.boxyard_version} or newer`,
    );
  }
}

/** Parses a manifest read from elsewhere (an S3 backup), with the same checks as readManifest. */
export function parseManifest(text: string): Manifest {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BackupError(`backup file ${MANIFEST_FILE} is corrupted: not valid JSON`);
  }
  const result = manifestSchema.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    throw new BackupError(`backup file ${MANIFEST_FILE} is corrupted or not a Boxyard backup: ${issue.path.join('.') || '(top)'}: ${issue.message}`);
  }
  checkManifestVersions(result.data);
  return result.data;
}

/** Every file the manifest names, with its expected size and sha256. */
export function manifestFiles(manifest: Manifest): FileRecord[] {
  const files: FileRecord[] = manifest.secrets ? [manifest.secrets] : [];
  for (const service of Object.values(manifest.services)) files.push(...service.tables, ...service.objects);
  return files;
}
