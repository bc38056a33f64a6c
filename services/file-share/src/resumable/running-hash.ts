// The sha256 of an s3 upload's bytes as they arrive, kept by the replica that received them. Node's hash state
// cannot be saved and loaded elsewhere, so this is a cache that PostgreSQL vouches for: each chunk's commit
// records which hasher (a random token) has seen bytes [0, received), and a replica uses its hasher only when
// the row names it and it stands at the row's offset. When another replica took a chunk (or this one restarted),
// the row names no usable hasher and the finished object is read once to hash it. Nothing in memory decides
// what is stored, only how its checksum is computed.
import { createHash, randomUUID, type Hash } from 'node:crypto';
import type { UploadRow } from './upload-rows.ts';

const MAX_ENTRIES = 10_000;

interface Entry {
  token: string;
  offset: number;
  hash: Hash;
}

export interface ChunkHasher {
  /** Token to record with the chunk, or null when this chunk leaves the upload without a running hash. */
  token: string | null;
  update(bytes: Buffer): void;
  /** After the chunk committed at `offset`. */
  commit(offset: number): void;
}

export function createRunningHashes() {
  const entries = new Map<string, Entry>();

  return {
    /** A hasher for the chunk that starts at `row.received`, continuing this replica's state when the row vouches for it. */
    forChunk(row: UploadRow): ChunkHasher {
      const cached = entries.get(row.id);
      const usable = cached && cached.token === row.hasher && cached.offset === row.received;
      const hash = usable ? cached.hash.copy() : row.received === 0 ? createHash('sha256') : undefined;
      const token = hash ? (usable ? cached.token : randomUUID()) : null;
      return {
        token,
        update: (bytes) => hash?.update(bytes),
        commit(offset) {
          entries.delete(row.id);
          if (!hash || !token) return;
          if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!); // the oldest: it re-reads at the end
          entries.set(row.id, { token, offset, hash });
        },
      };
    },

    /** The file's sha256 when this replica's hasher saw every byte (the row says so); else undefined. */
    digest(row: UploadRow): string | undefined {
      const cached = entries.get(row.id);
      entries.delete(row.id);
      if (!cached || cached.token !== row.hasher || cached.offset !== row.length) return undefined;
      return cached.hash.digest('hex');
    },

    forget: (id: string) => void entries.delete(id),
  };
}

export type RunningHashes = ReturnType<typeof createRunningHashes>;
