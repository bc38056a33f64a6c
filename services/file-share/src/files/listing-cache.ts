// The JSON listing of a folder, serialized once and kept per replica under the folder's listing version (a
// counter PostgreSQL bumps in the same transaction as any change the listing shows, whoever makes it:
// migrations/0005_listing_version.sql). A repeated listing of an unchanged folder costs the folder's lookup,
// which every request makes anyway, and no serializing; a change on any replica misses at once. lru-cache (already
// the kit's cache) bounds the bytes kept, so many large folders cannot grow the process without limit.
import { LRUCache } from 'lru-cache';
import type { Entry, Page, Tree } from '../tree/tree-store.ts';
import { encodeCursor } from './listing-cursor.ts';

/** Bytes of serialized listings one replica keeps (a 10,000-entry page is ~1.7 MB). */
export const LISTING_CACHE_BYTES = 32 * 1024 * 1024;

interface Cached {
  version: string;
  body: Buffer;
  /** The `next` cursor, null on the last page. */
  next: string | null;
}

/**
 * A listing nobody asked for during this long is dropped (checked as often), so a process that goes idle gives the
 * memory back: the process's idle collection (`serve all`, after 10 s of quiet) then frees it, where an LRU bound
 * alone kept up to its 32 MiB for as long as the process lived (issue 35: RSS after a big share's loads). A folder
 * read at least this often stays cached.
 */
export const LISTING_IDLE_MS = 5_000;

export function createListingCache(tree: Tree, maxBytes = LISTING_CACHE_BYTES, idleMs = LISTING_IDLE_MS) {
  const cache = new LRUCache<string, Cached>({
    maxSize: maxBytes,
    sizeCalculation: (value) => Math.max(1, value.body.length),
    ttl: idleMs,
    updateAgeOnGet: true,
  });
  const purge = setInterval(() => cache.purgeStale(), idleMs).unref();
  return {
    /** Stops the idle purge and drops every listing (the app is closing). */
    close(): void {
      clearInterval(purge);
      cache.clear();
    },
    /**
     * The folder's JSON listing body, byte for byte what the route's schema serializer made of
     * { success, message, path, total, page, limit, next, files: entries.map(entryView) }, and its `next`
     * cursor. Null when the folder was deleted after `directory` was looked up.
     */
    async body(directory: Entry, pageNumber: number, page: Page, cursor = ''): Promise<{ body: Buffer; next: string | null } | null> {
      const key = `${directory.id}:${page.offset}:${page.limit}:${cursor}`;
      const cached = cache.get(key);
      if (cached?.version === directory.listing_version) return cached;
      const listing = await tree.listJson(directory, page);
      if (!listing) return null;
      const next = listing.last_kind && listing.last_name !== null ? encodeCursor({ kind: listing.last_kind, name: listing.last_name }) : null;
      const body = Buffer.from(
        `{"success":true,"message":"Folder listing","path":${JSON.stringify(listing.path)},"total":${listing.total},` +
          `"page":${pageNumber},"limit":${page.limit},"next":${JSON.stringify(next)},"files":[${listing.files}]}`,
      );
      // Stored under the version read in the listing's own snapshot, never the (possibly older) lookup's.
      const entry = { version: listing.version, body, next };
      cache.set(key, entry);
      return entry;
    },
  };
}

export type ListingCache = ReturnType<typeof createListingCache>;
