// The HTML listing of a folder, streamed: the page's frame (per viewer: who is signed in, what they may do) around
// the entries' rows, which are the same for everyone. The rows are read in keyset chunks of CHUNK_ENTRIES and sent
// as each chunk is rendered, so a request holds one chunk at a time, never the page (a 10,000-entry page is ~3.3 MB
// of HTML; 8 clients building it as one string each added ~420 MiB RSS in 10 s). A page's rows up to
// CACHEABLE_BYTES are also kept per replica under the folder's listing version (as the JSON listing's are:
// listing-cache.ts), so a repeated listing of an unchanged folder costs its lookup and the frame, and every
// request sends the same bytes. A change to the folder while a page streams may show in the chunks read after it,
// as `ls` during a change does; the cached copy is stored under the version looked up before the first read, so the
// next request after the change misses and reads afresh.
import { Readable, type Writable } from 'node:stream';
import { LRUCache } from 'lru-cache';
import type { Entry, Tree } from '../tree/tree-store.ts';
import { LISTING_IDLE_MS } from './listing-cache.ts';
import { renderRow } from './listing-html.ts';

/** Entries read and rendered at a time. */
export const CHUNK_ENTRIES = 1000;
/** A page's rows kept when they are at most this long (a 10,000-entry page is ~3.3 MB). */
const CACHEABLE_BYTES = 4 * 1024 * 1024;
/** Bytes of rendered rows one replica keeps. */
export const HTML_ROWS_CACHE_BYTES = 32 * 1024 * 1024;

interface CachedRows {
  version: string;
  total: number;
  /** The rows as rendered, in chunks (never joined: they are written one after another). */
  chunks: Buffer[];
  bytes: number;
}

export interface HtmlListing {
  /** The page's bytes as a stream, and its length when known before sending (cached rows). */
  stream: Readable;
  length: number | undefined;
}

type Frame = (total: number) => { head: string; tail: string };

/**
 * A page made of bytes already in memory (the frame and the cached rows): written to the response at once (the kit's
 * sendStoredBody: no stream machinery per request; nothing is copied, the cache keeps the rows), corked into one
 * writev. Still a Readable for anyone who pipes it.
 */
class PageBytes extends Readable {
  readonly #parts: Buffer[];
  constructor(parts: Buffer[]) {
    super();
    this.#parts = parts;
  }
  override _read(): void {
    for (const part of this.#parts) this.push(part);
    this.push(null);
  }
  writeTo(out: Writable): Promise<void> {
    if (out.destroyed) return Promise.reject(new Error('the client went away'));
    out.cork();
    for (const part of this.#parts) out.write(part);
    out.uncork();
    return Promise.resolve();
  }
}

export function createHtmlListing(tree: Pick<Tree, 'list' | 'listEntries'>, maxBytes = HTML_ROWS_CACHE_BYTES, idleMs = LISTING_IDLE_MS) {
  // Dropped when unread for idleMs, as the JSON listings are (listing-cache.ts says why).
  const cache = new LRUCache<string, CachedRows>({
    maxSize: maxBytes,
    sizeCalculation: (value) => Math.max(1, value.bytes),
    ttl: idleMs,
    updateAgeOnGet: true,
  });
  const purge = setInterval(() => cache.purgeStale(), idleMs).unref();

  /** Renders the page's rows chunk by chunk after `first`, keeping them for the cache while they stay small. */
  async function* rows(directory: Entry, key: string, limit: number, total: number, first: readonly Entry[]): AsyncGenerator<Buffer> {
    let entries = first;
    let asked = Math.min(CHUNK_ENTRIES, limit);
    let sent = 0;
    let kept: Buffer[] | null = [];
    let keptBytes = 0;
    while (entries.length > 0) {
      const chunk = Buffer.from(`${sent > 0 ? '\n' : ''}${entries.map(renderRow).join('\n')}`);
      sent += entries.length;
      if (kept) {
        keptBytes += chunk.length;
        if (keptBytes <= CACHEABLE_BYTES) kept.push(chunk);
        else kept = null;
      }
      yield chunk;
      // A short chunk was the folder's last.
      if (entries.length < asked || sent >= limit) break;
      asked = Math.min(CHUNK_ENTRIES, limit - sent);
      const last = entries.at(-1)!;
      entries = await tree.listEntries(directory, { offset: 0, limit: asked, after: { kind: last.kind, name: last.name } });
    }
    if (kept) cache.set(key, { version: directory.listing_version, total, chunks: kept, bytes: keptBytes });
  }

  return {
    /** Stops the idle purge and drops every cached page (the app is closing). */
    close(): void {
      clearInterval(purge);
      cache.clear();
    },
    /** Page `pageNumber` of `limit` entries of `directory`, in the frame `frame(total)` gives. */
    async page(directory: Entry, pageNumber: number, limit: number, frame: Frame): Promise<HtmlListing> {
      const key = `${directory.id}:${pageNumber}:${limit}`;
      const cached = cache.get(key);
      if (cached?.version === directory.listing_version) {
        const { head, tail } = frame(cached.total);
        const parts = [Buffer.from(head), ...cached.chunks, Buffer.from(tail)];
        return { stream: new PageBytes(parts), length: parts.reduce((sum, part) => sum + part.length, 0) };
      }
      const { total, entries } = await tree.list(directory, { offset: (pageNumber - 1) * limit, limit: Math.min(CHUNK_ENTRIES, limit) });
      const { head, tail } = frame(total);
      async function* page(): AsyncGenerator<Buffer> {
        yield Buffer.from(head);
        yield* rows(directory, key, limit, total, entries);
        yield Buffer.from(tail);
      }
      // One chunk ahead at most: a slow client holds back the reads, not the memory.
      return { stream: Readable.from(page(), { objectMode: false, highWaterMark: 1 }), length: undefined };
    },
  };
}

export type HtmlListings = ReturnType<typeof createHtmlListing>;
