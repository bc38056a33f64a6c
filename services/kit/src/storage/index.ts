// Picks the storage driver from the service's config (snake_case, as written in YAML).
import { createLocalStore } from './local.ts';
import { createS3Store } from './s3.ts';
import type { ObjectStore } from './types.ts';

export type StorageConfig =
  | { driver: 'local'; root: string }
  | { driver: 's3'; endpoint: string; access_key: string; secret_key: string; bucket: string; region: string; prefix?: string };

export function createObjectStore(config: StorageConfig): ObjectStore {
  switch (config.driver) {
    case 'local':
      return createLocalStore({ root: config.root });
    case 's3':
      return createS3Store({
        endpoint: config.endpoint,
        accessKey: config.access_key,
        secretKey: config.secret_key,
        bucket: config.bucket,
        region: config.region,
        ...(config.prefix !== undefined ? { prefix: config.prefix } : {}),
      });
    default:
      throw new Error(`unknown storage driver ${JSON.stringify((config as { driver?: unknown }).driver)}`);
  }
}

export * from './errors.ts';
export type * from './types.ts';
export { createLocalStore, type LocalStoreOptions } from './local.ts';
export { createS3Store, type S3StoreOptions } from './s3.ts';
export { HashingCounter, type HashingCounterOptions } from './hashing-counter.ts';
export { validateKey, validatePrefix } from './keys.ts';
export type { MultipartUploads } from './s3-multipart.ts';
