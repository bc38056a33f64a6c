// Storage failures as plain errors with an HTTP status and a stable code, so the HTTP layer can map them
// (it reads `statusCode`) without knowing which driver raised them.

export abstract class StorageError extends Error {
  abstract readonly statusCode: number;
  abstract readonly code: string;
}

/** The body passed the caller's (or the driver's) size limit; nothing was stored. */
export class ObjectTooLargeError extends StorageError {
  override name = 'ObjectTooLargeError';
  readonly statusCode = 413;
  readonly code = 'OBJECT_TOO_LARGE';
  readonly limit: number;

  constructor(limit: number) {
    super(`object is larger than the limit of ${limit} bytes`);
    this.limit = limit;
  }
}

/** The body's sha256 differs from the one the caller announced; nothing was stored. */
export class ChecksumMismatchError extends StorageError {
  override name = 'ChecksumMismatchError';
  readonly statusCode = 422;
  readonly code = 'CHECKSUM_MISMATCH';
  readonly expected: string;
  readonly actual: string;

  constructor(expected: string, actual: string) {
    super(`sha256 mismatch: expected ${expected}, got ${actual}`);
    this.expected = expected;
    this.actual = actual;
  }
}

/** The body's length differs from the one the caller announced (`PutOptions.size`); nothing was stored. */
export class BodyLengthMismatchError extends StorageError {
  override name = 'BodyLengthMismatchError';
  readonly statusCode = 400;
  readonly code = 'BODY_LENGTH_MISMATCH';
  readonly announced: number;

  constructor(announced: number, actual: string) {
    super(`the body is ${actual} bytes, not the ${announced} announced`);
    this.announced = announced;
  }
}

export class ObjectNotFoundError extends StorageError {
  override name = 'ObjectNotFoundError';
  readonly statusCode = 404;
  readonly code = 'OBJECT_NOT_FOUND';
  readonly key: string;

  constructor(key: string) {
    super(`object not found: ${key}`);
    this.key = key;
  }
}

/** The range starts at or after the end of the object; `size` feeds `Content-Range: bytes *\/size`. */
export class RangeNotSatisfiableError extends StorageError {
  override name = 'RangeNotSatisfiableError';
  readonly statusCode = 416;
  readonly code = 'RANGE_NOT_SATISFIABLE';
  readonly size: number;

  constructor(size: number) {
    super(`range not satisfiable for an object of ${size} bytes`);
    this.size = size;
  }
}

/** The disk or the object store is full (ENOSPC/EDQUOT, MinIO's storage-full codes). */
export class StorageFullError extends StorageError {
  override name = 'StorageFullError';
  readonly statusCode = 507;
  readonly code = 'STORAGE_FULL';

  constructor(options?: { cause?: unknown }) {
    super('storage is full', options);
  }
}

/** The key (or prefix) is not an acceptable object name. */
export class InvalidKeyError extends StorageError {
  override name = 'InvalidKeyError';
  readonly statusCode = 400;
  readonly code = 'INVALID_KEY';
  readonly key: string;

  constructor(key: string, reason: string) {
    super(`invalid key ${JSON.stringify(key)}: ${reason}`);
    this.key = key;
  }
}

/**
 * The key collides with another key used as its "directory" (`a` vs `a/b`): a directory tree can't hold
 * both, and neither does MinIO (ParentIsObject / ObjectExistsAsDirectory).
 */
export class KeyConflictError extends StorageError {
  override name = 'KeyConflictError';
  readonly statusCode = 409;
  readonly code = 'KEY_CONFLICT';
  readonly key: string;

  constructor(key: string, options?: { cause?: unknown }) {
    super(`key ${JSON.stringify(key)} conflicts with an existing key that is its parent or child`, options);
    this.key = key;
  }
}

/** The backend can't be reached or isn't ready (missing bucket, unwritable directory, network down). */
export class StorageUnavailableError extends StorageError {
  override name = 'StorageUnavailableError';
  readonly statusCode = 503;
  readonly code = 'STORAGE_UNAVAILABLE';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
