// A file or folder entry as the seed lists it, and its JSON schema.
import type { Entry } from '../tree/tree-store.ts';

/** A file entry as the seed lists it. */
export const entryView = (entry: Entry) => ({
  name: entry.name,
  path: entry.path,
  size: entry.size,
  mtime: new Date(entry.mtime).toISOString(),
  checksum: entry.sha256,
  isDirectory: entry.kind === 'dir',
});

export const entrySchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    path: { type: 'string', description: 'Share path, `/` separated, without a trailing slash' },
    size: { type: 'integer', description: 'Bytes (0 for folders)' },
    mtime: { type: 'string', format: 'date-time' },
    checksum: { type: ['string', 'null'], description: 'Lower-case hex SHA-256 (null for folders)' },
    isDirectory: { type: 'boolean' },
  },
  required: ['name', 'path', 'size', 'mtime', 'checksum', 'isDirectory'],
};
