// The local driver's directory (layout in local.ts): where a key's file is, and its errno values as storage errors.
import { join, resolve, sep } from 'node:path';
import { InvalidKeyError, StorageError, StorageFullError, StorageUnavailableError } from './errors.ts';
import { validateKey } from './keys.ts';

export interface LocalLayout {
  root: string;
  /** objects/: one file per key. */
  objectsDir: string;
  /** .tmp/: uploads in progress. */
  tmpDir: string;
}

export function localLayout(root: string): LocalLayout {
  const resolved = resolve(root);
  return { root: resolved, objectsDir: join(resolved, 'objects'), tmpDir: join(resolved, '.tmp') };
}

/** The file of a key; validation already rules out `..`, the prefix check is a second line of defence. */
export function pathOf({ objectsDir }: LocalLayout, key: string): string {
  validateKey(key);
  const path = resolve(objectsDir, ...key.split('/'));
  if (!path.startsWith(objectsDir + sep)) throw new InvalidKeyError(key, 'resolves outside the storage root');
  return path;
}

export const dirPathOf = ({ objectsDir }: LocalLayout, dirKey: string): string => (dirKey === '' ? objectsDir : join(objectsDir, ...dirKey.split('/')));

export const errno = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/** Disk-full and similar errno values as storage errors the HTTP layer understands. */
export function toStorageError(error: unknown, key: string): unknown {
  if (error instanceof StorageError) return error;
  switch (errno(error)) {
    case 'ENOSPC':
    case 'EDQUOT':
      return new StorageFullError({ cause: error });
    case 'ENAMETOOLONG':
      return new InvalidKeyError(key, 'too long for the filesystem');
    case 'EROFS':
    case 'EIO':
      return new StorageUnavailableError(`storage directory is not writable: ${(error as Error).message}`, { cause: error });
    default:
      return error;
  }
}
