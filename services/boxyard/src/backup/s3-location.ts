// Backups kept in S3: `s3://<bucket>/<prefix>`. The endpoint and credentials come from the environment, under the
// names the AWS tools use (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION), so a Job can
// take them from a Secret with `envFrom`/`secretKeyRef` and a person from their usual shell setup.
import { createObjectStore, type ObjectStore } from '@boxyard/kit';
import { trimLeading, trimTrailing } from '@boxyard/kit/text/trim.ts';
import { BackupError } from './errors.ts';

export interface S3Location {
  bucket: string;
  /** Without leading or trailing slash; may be empty (the whole bucket). */
  prefix: string;
  endpoint: string;
  region: string;
  accessKey: string;
  secretKey: string;
}

const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export const isS3Location = (location: string) => location.startsWith('s3://');

export function parseS3Location(location: string, env: NodeJS.ProcessEnv = process.env): S3Location {
  const rest = location.slice('s3://'.length);
  const slash = rest.indexOf('/');
  const bucket = slash < 0 ? rest : rest.slice(0, slash);
  const prefix = slash < 0 ? '' : trimTrailing(trimLeading(rest.slice(slash + 1), '/'), '/');
  if (!BUCKET.test(bucket)) throw new BackupError(`${location}: "${bucket}" is not a valid S3 bucket name (s3://<bucket>/<prefix>)`);
  if (prefix.split('/').some((s) => s === '.' || s === '..') || prefix.includes('//'))
    throw new BackupError(`${location}: the prefix must not have empty, "." or ".." segments`);
  const need = (name: string) => {
    const value = env[name];
    if (!value)
      throw new BackupError(`${location}: set ${name} (the S3 endpoint and credentials come from AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)`);
    return value;
  };
  const endpoint = need('AWS_ENDPOINT_URL');
  if (!/^https?:\/\//.test(endpoint)) throw new BackupError(`AWS_ENDPOINT_URL: must be an http:// or https:// URL`);
  return {
    bucket,
    prefix,
    endpoint,
    region: env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
    accessKey: need('AWS_ACCESS_KEY_ID'),
    secretKey: need('AWS_SECRET_ACCESS_KEY'),
  };
}

export const describeS3 = (location: S3Location) => `s3://${location.bucket}/${location.prefix}`;

export function s3BackupStore(location: S3Location): ObjectStore {
  return createObjectStore({
    driver: 's3',
    endpoint: location.endpoint,
    access_key: location.accessKey,
    secret_key: location.secretKey,
    bucket: location.bucket,
    region: location.region,
    prefix: location.prefix,
  });
}

/** The first key under the location, if any: a backup is only written under an empty prefix. */
export async function firstKey(store: ObjectStore, location: S3Location): Promise<string | undefined> {
  try {
    for await (const object of store.list('')) return object.key;
  } catch (error) {
    throw new BackupError(`${describeS3(location)}: cannot list the bucket: ${(error as Error).message}`);
  }
  return undefined;
}
